package observe

import (
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	fwk "k8s.io/kube-scheduler/framework"
)

// nodeSet caches the names of the snapshot's nodes, indexes to find them
// and their order by name. The snapshot keeps its node list until nodes
// are added or removed, so the cache is rebuilt only then.
type nodeSet struct {
	list  *fwk.NodeInfo // the first element of the snapshot's list
	names []string      // in the snapshot's order
	index map[string]int32
	// byData finds a name by the address of its bytes, in an open
	// addressing table of 1 + index (0: empty): the names the framework
	// passes to Filter and Score are the strings of the same Node objects,
	// and an address is hashed and compared in a fraction of the time a
	// string takes. A node updated since the set was built has a new name
	// string, found through index.
	byData []int32
	shift  uint    // 64 - log2(len(byData))
	sorted []int32 // indexes into names, by name
	rank   []int32 // rank[i] is the place of names[i] in sorted
}

var emptyNodeSet = &nodeSet{}

func (r *Recorder) nodeSetOf(list []fwk.NodeInfo) *nodeSet {
	if len(list) == 0 {
		return emptyNodeSet
	}
	if c := r.nodes.Load(); c != nil && c.list == &list[0] && len(c.names) == len(list) {
		return c
	}
	set := newNodeSet(list)
	r.nodes.Store(set)
	return set
}

func newNodeSet(list []fwk.NodeInfo) *nodeSet {
	n := len(list)
	// At most half full, so that a probe rarely goes past the first slot.
	size := uint(bits.Len(uint(2*n - 1)))
	set := &nodeSet{
		list:   &list[0],
		names:  make([]string, n),
		index:  make(map[string]int32, n),
		byData: make([]int32, 1<<size),
		shift:  64 - size,
		sorted: make([]int32, n),
		rank:   make([]int32, n),
	}
	for i, info := range list {
		name := info.Node().Name
		set.names[i] = name
		set.index[name] = int32(i)
		set.sorted[i] = int32(i)
		for h := set.slot(name); ; h = (h + 1) & (len(set.byData) - 1) {
			if set.byData[h] == 0 {
				set.byData[h] = int32(i) + 1
				break
			}
		}
	}
	slices.SortFunc(set.sorted, func(x, y int32) int { return strings.Compare(set.names[x], set.names[y]) })
	for place, i := range set.sorted {
		set.rank[i] = int32(place)
	}
	return set
}

// slot is where byData's probe for name starts: a Fibonacci hash of the
// address of its bytes.
func (s *nodeSet) slot(name string) int {
	return int((uint64(uintptr(unsafe.Pointer(unsafe.StringData(name)))) * 0x9e3779b97f4a7c15) >> s.shift)
}

// find returns the index of the node named name.
func (s *nodeSet) find(name string) (int32, bool) {
	if len(s.byData) > 0 {
		data := unsafe.StringData(name)
		for h := s.slot(name); s.byData[h] != 0; h = (h + 1) & (len(s.byData) - 1) {
			i := s.byData[h] - 1
			if unsafe.StringData(s.names[i]) == data && len(s.names[i]) == len(name) {
				return i, true
			}
		}
	}
	i, ok := s.index[name]
	return i, ok
}

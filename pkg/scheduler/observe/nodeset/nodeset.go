// Package nodeset indexes the names of the nodes of the scheduler's
// snapshot: where the framework names a node in a Filter or Score call, it
// finds the node's place in the snapshot, and it knows the nodes' order by
// name, the order of a decision record.
package nodeset

import (
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	fwk "k8s.io/kube-scheduler/framework"
)

// Set caches the names of the snapshot's nodes, indexes to find them and
// their order by name. The snapshot keeps its node list until nodes are
// added or removed, so a Set is built again only then (BuiltFrom).
type Set struct {
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

// Empty is the set of no nodes.
var Empty = &Set{}

// New returns the set of the nodes of list, the snapshot's; Empty for no
// nodes.
func New(list []fwk.NodeInfo) *Set {
	n := len(list)
	if n == 0 {
		return Empty
	}
	// At most half full, so that a probe rarely goes past the first slot.
	size := uint(bits.Len(uint(2*n - 1)))
	set := &Set{
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

// BuiltFrom tells whether s is the set of list: the snapshot's same list,
// of the same length.
func (s *Set) BuiltFrom(list []fwk.NodeInfo) bool {
	if len(list) == 0 {
		return len(s.names) == 0
	}
	return s.list == &list[0] && len(s.names) == len(list)
}

// Len is the number of nodes.
func (s *Set) Len() int { return len(s.names) }

// Name returns the name of the node at index i of the snapshot.
func (s *Set) Name(i int32) string { return s.names[i] }

// ByName returns the nodes' indexes in the order of their names. The
// slice is the set's own: it must not be changed.
func (s *Set) ByName() []int32 { return s.sorted }

// Rank returns the place of the node at index i in the order of names.
func (s *Set) Rank(i int32) int32 { return s.rank[i] }

// slot is where byData's probe for name starts: a Fibonacci hash of the
// address of its bytes.
func (s *Set) slot(name string) int {
	return int((uint64(uintptr(unsafe.Pointer(unsafe.StringData(name)))) * 0x9e3779b97f4a7c15) >> s.shift)
}

// Find returns the index of the node named name.
func (s *Set) Find(name string) (int32, bool) {
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

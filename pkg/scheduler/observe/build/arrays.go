package build

import (
	"sync"

	"github.com/schedscope/schedscope/pkg/record"
)

// Arrays are the largest slices of a record: its scored nodes, their values
// and the names of its Filter groups, most of what a 5000-node attempt's
// record allocates. They are reused from record to record, as a record's
// readers (the Sink, the Tracer, OnRecord) do not keep it past their call.
type Arrays struct {
	scores []record.NodeScore
	values []int64
	names  []string
}

var arraysPool = sync.Pool{New: func() any { return &Arrays{} }}

// NewArrays returns arrays for a record, reused from a released record's.
func NewArrays() *Arrays { return arraysPool.Get().(*Arrays) }

// Release gives the arrays back for reuse: the record built into them must
// not be read after.
func (r *Arrays) Release() {
	clear(r.scores)
	clear(r.names)
	arraysPool.Put(r)
}

// resize returns s with length n, zeroed, reusing its array when it has room.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// scratch holds Record's temporary arrays, reused from record to record.
type scratch struct {
	groupOf []int32    // by node of the snapshot, zero between uses
	order   []scoreKey // by scored node
}

var scratchPool = sync.Pool{New: func() any { return &scratch{} }}

// getScratch returns scratch whose groupOf has room for nodes nodes.
func getScratch(nodes int) *scratch {
	sc := scratchPool.Get().(*scratch)
	if cap(sc.groupOf) < nodes {
		sc.groupOf = make([]int32, nodes)
	}
	sc.groupOf = sc.groupOf[:nodes]
	return sc
}

func putScratch(sc *scratch) {
	clear(sc.groupOf)
	scratchPool.Put(sc)
}

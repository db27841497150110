package observe

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
)

// benchmarkAttempt returns a cycle state holding an attempt over nodes and
// the wrapper of a filter plugin registered in its profile.
func benchmarkAttempt(b *testing.B, nodes int) (fwk.CycleState, *attempt, fwk.FilterPlugin, []fwk.NodeInfo) {
	r := NewRecorder(Options{Sink: discard{}})
	w := observedFilter(r, "bench")
	infos := make([]fwk.NodeInfo, nodes)
	for i := range infos {
		n := framework.NewNodeInfo()
		n.SetNode(st.MakeNode().Name(fmt.Sprintf("node-%04d", nodes-i)).Obj())
		infos[i] = n
	}
	state := framework.NewCycleState()
	a := newAttempt(r.profileTable("bench"), st.MakePod().Name("p").Obj(), 1, time.Now(), time.Now(), r.nodeSetOf(infos))
	state.Write(stateKey, a)
	a.table.current.Store(a)
	return state, a, w, infos
}

// BenchmarkFilterCall measures what observing adds to one Filter call of one
// plugin on one node: the wrapper's timing, and the framework wrapper's
// verdict slot. Run with -benchmem: it must not allocate.
func BenchmarkFilterCall(b *testing.B) {
	state, a, filter, nodes := benchmarkAttempt(b, 5000)
	pod := st.MakePod().Name("p").Obj()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		node := nodes[i%len(nodes)]
		s := filter.Filter(ctx, state, pod, node)
		a.addVerdict(node.Node().Name, s)
		if i++; i == len(nodes) {
			i = 0
		}
	}
}

// BenchmarkFilterCallParallel is BenchmarkFilterCall from many goroutines,
// as the framework's parallel Filter workers call it: each on nodes of its
// own at a time (the workers take the nodes in chunks).
func BenchmarkFilterCallParallel(b *testing.B) {
	state, a, filter, nodes := benchmarkAttempt(b, 5000)
	pod := st.MakePod().Name("p").Obj()
	ctx := context.Background()
	var workers atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(workers.Add(1)) * len(nodes) / 16
		for pb.Next() {
			node := nodes[i%len(nodes)]
			a.addVerdict(node.Node().Name, filter.Filter(ctx, state, pod, node))
			i++
		}
	})
	_ = a
}

// encodingSink keeps the JSON of each record it is given, as the stream
// buffer does.
type encodingSink struct{ encoded [][]byte }

func (s *encodingSink) Add(a *record.Attempt) error {
	data, err := record.Encode(a)
	s.encoded = append(s.encoded, data)
	return err
}

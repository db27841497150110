package observe

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/nodeset"
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

func (s *encodingSink) Add(a *record.Attempt, _ string) error {
	data, err := record.Encode(a)
	s.encoded = append(s.encoded, data)
	return err
}

// tracer traces every record as the same trace.
type tracer string

func (t tracer) Trace(*v1.Pod, *record.Attempt) string { return string(t) }

// traceSink keeps the trace ID of each record it is given.
type traceSink struct{ traceIDs []string }

func (s *traceSink) Add(_ *record.Attempt, traceID string) error {
	s.traceIDs = append(s.traceIDs, traceID)
	return nil
}

// TestPublishHandsTheTraceToTheSink: the trace ID the Tracer returns goes
// to the Sink beside the record; without a Tracer, the record has none.
func TestPublishHandsTheTraceToTheSink(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tracer Tracer
		want   string
	}{
		{name: "traced", tracer: tracer("4bf92f3577b34da6a3ce929d0e0e4736"), want: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{name: "not traced"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sink := &traceSink{}
			r := NewRecorder(Options{Sink: sink, Tracer: tt.tracer})
			r.publish(newAttempt(r.profileTable("p"), &v1.Pod{}, 1, time.Unix(0, 0), time.Unix(1, 0), nodeset.Empty))
			if diff := cmp.Diff([]string{tt.want}, sink.traceIDs); diff != "" {
				t.Errorf("trace IDs (-want +got):\n%s", diff)
			}
		})
	}
}

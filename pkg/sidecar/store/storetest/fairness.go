package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/stream"
)

// tenants writes, in order, n attempts of each batch's namespace, one pod
// each (pods ns/p0, ns/p1, ... with UIDs ns-0, ...), every rejection
// naming nodes nodes: the first batches written are the oldest.
type tenants struct {
	s     store.Store
	seq   uint64
	nodes int
	next  map[string]int
}

func (w *tenants) write(t *testing.T, namespace string, n int) {
	t.Helper()
	nodes := recordtest.NodeNames("node", 0, w.nodes)
	for n > 0 {
		var records []*record.Attempt
		for range min(n, 100) {
			i := w.next[namespace]
			w.next[namespace]++
			records = append(records, recordtest.MakeAttempt(namespace, fmt.Sprint("p", i), fmt.Sprint(namespace, "-", i)).
				Unschedulable(fmt.Sprintf("0/%d nodes are available", w.nodes)).
				Rejected("NodeAffinity", fmt.Sprintf("didn't match, attempt %d of %s", i, namespace), nodes...).Obj())
		}
		first := w.seq + 1
		w.seq += uint64(len(records))
		if err := w.s.Append(context.Background(), v1alpha1.Cursor{Epoch: "e1", Seq: w.seq}, stream.Records(first, records...)); err != nil {
			t.Fatal(err)
		}
		n -= len(records)
	}
}

// kept returns the indexes of namespace's pods that s still holds, in
// order.
func kept(t *testing.T, s store.Store, namespace string) []int {
	t.Helper()
	pods, err := s.Pods(context.Background(), store.PodListOptions{Namespaces: []string{namespace}})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range pods {
		var i int
		if _, err := fmt.Sscanf(p.Pod.Name, "p%d", &i); err != nil {
			t.Fatalf("pod %s/%s: %v", p.Pod.Namespace, p.Pod.Name, err)
		}
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// newest returns the indexes of the newest k of n pods, oldest first.
func newest(k, n int) []int {
	var out []int
	for i := n - k; i < n; i++ {
		out = append(out, i)
	}
	return out
}

// testPruneByCountIsFair: MaxAttempts is shared max-min fairly among the
// namespaces. Of 30 attempts, a quiet namespace of 5 keeps all of them
// (under its share of 10), and the other 25 are split between a namespace
// of 20 and a churning one of 100: each keeps its newest 12, although the
// quiet namespaces' attempts are the store's oldest.
func testPruneByCountIsFair(t *testing.T, h Harness) {
	s := h.open(t, store.Retention{MaxAttempts: 30})
	w := &tenants{s: s, nodes: 2, next: map[string]int{}}
	w.write(t, "quiet", 5)
	w.write(t, "steady", 20)
	w.write(t, "churn", 100)
	removed, err := s.Prune(context.Background(), recordtest.Base)
	if err != nil {
		t.Fatal(err)
	}
	if want := 125 - 5 - 12 - 12; removed != want {
		t.Errorf("removed %d, want %d", removed, want)
	}
	for _, tt := range []struct {
		namespace string
		want      []int
	}{
		{"quiet", newest(5, 5)},
		{"steady", newest(12, 20)},
		{"churn", newest(12, 100)},
	} {
		if diff := cmp.Diff(tt.want, kept(t, s, tt.namespace)); diff != "" {
			t.Errorf("pods of namespace %s kept (-want +got):\n%s", tt.namespace, diff)
		}
	}
}

// testPruneByBytesIsFair: a namespace churning far more than MaxDiskBytes
// after two quiet namespaces wrote a little (the store's oldest attempts)
// is cut to its newest attempts, the quiet namespaces keep every attempt,
// and the store is within the bound.
func testPruneByBytesIsFair(t *testing.T, h Harness) {
	const limit = 1 << 20
	s := h.open(t, store.Retention{MaxDiskBytes: limit})
	w := &tenants{s: s, nodes: 300, next: map[string]int{}}
	w.write(t, "quiet-a", 10)
	w.write(t, "quiet-b", 10)
	const churned = 3000
	w.write(t, "churn", churned)
	before := h.RetainedBytes(t, s)
	if before <= 2*limit {
		t.Fatalf("the store holds %d bytes before retention, want more than twice %d for the test to mean anything", before, limit)
	}
	removed, err := s.Prune(context.Background(), recordtest.Base)
	if err != nil {
		t.Fatal(err)
	}
	if after := h.RetainedBytes(t, s); after > limit {
		t.Errorf("%d bytes after retention (%d before, %d attempts removed), want at most %d", after, before, removed, limit)
	}
	for _, ns := range []string{"quiet-a", "quiet-b"} {
		if diff := cmp.Diff(newest(10, 10), kept(t, s, ns)); diff != "" {
			t.Errorf("pods of quiet namespace %s kept (-want +got):\n%s", ns, diff)
		}
	}
	churn := kept(t, s, "churn")
	if len(churn) == 0 || len(churn)+removed != churned {
		t.Fatalf("churning namespace: %d attempts kept, %d removed; want some kept and the %d removed all its", len(churn), removed, removed)
	}
	if diff := cmp.Diff(newest(len(churn), churned), churn); diff != "" {
		t.Errorf("pods of the churning namespace kept, want its newest (-want +got):\n%s", diff)
	}
	t.Logf("%d bytes before, %d after; the churning namespace keeps %d of %d attempts", before, h.RetainedBytes(t, s), len(churn), churned)
}

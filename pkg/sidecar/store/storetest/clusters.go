package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
)

// Two clusters written into one store: east holds Fixture under cursor
// (e1, 5); west holds the same epoch's first two records, the same pods'
// UIDs and sequences, under cursor (e1, 2): there a/p1 (uid-1) and b/p2
// (uid-2) are both pending.
const (
	east = "east"
	west = "west"
)

// clusters opens east with retention r and west, unbounded, on one new
// database, each holding its records and reading every cluster's; both are
// closed when the test ends.
func (h Harness) clusters(t *testing.T, r store.Retention) (eastStore, westStore store.Store) {
	t.Helper()
	return h.openClusters(t, store.Options{Cluster: east, Retention: r, AllClusters: true}, store.Options{Cluster: west, AllClusters: true})
}

// openClusters opens eastOpts and westOpts on one new database and
// appends each cluster's records; both are closed when the test ends.
func (h Harness) openClusters(t *testing.T, eastOpts, westOpts store.Options) (eastStore, westStore store.Store) {
	t.Helper()
	ctx := context.Background()
	open := h.New(t)
	var stores []store.Store
	for _, o := range []store.Options{eastOpts, westOpts} {
		s, err := open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	if err := stores[0].Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 5}, Fixture()); err != nil {
		t.Fatal(err)
	}
	if err := stores[1].Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 2}, Fixture()[:2]); err != nil {
		t.Fatal(err)
	}
	return stores[0], stores[1]
}

// clusterPods names pods as cluster:namespace/name.
func clusterPods(pods []v1alpha1.PodStatus) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Cluster+":"+p.Pod.Namespace+"/"+p.Pod.Name)
		if p.Latest.Cluster != p.Cluster {
			names = append(names, "latest attempt in "+p.Latest.Cluster)
		}
	}
	return names
}

// testClusterNameIsValidated: a cluster name is empty or a DNS-1123
// label; another is refused with an error naming it.
func testClusterNameIsValidated(t *testing.T, h Harness) {
	open := h.New(t)
	for _, name := range []string{"East", "east_1", "-east", strings.Repeat("e", 64)} {
		s, err := open(store.Options{Cluster: name})
		if err == nil {
			s.Close()
			t.Errorf("cluster name %q: opened, want an error", name)
			continue
		}
		if !strings.Contains(err.Error(), `cluster name "`+name+`"`) || !strings.Contains(err.Error(), "DNS-1123 label") {
			t.Errorf("cluster name %q: error %q, want one naming it and the rule", name, err)
		}
	}
}

// testClustersHaveTheirOwnCursors: each cluster's follower reads back its
// own cursor, across a reopen, and the unnamed cluster has none.
func testClustersHaveTheirOwnCursors(t *testing.T, h Harness) {
	ctx := context.Background()
	open := h.New(t)
	want := map[string]v1alpha1.Cursor{east: {Epoch: "e1", Seq: 5, Lost: 1}, west: {Epoch: "w1", Seq: 2}, "": {}}
	for _, pass := range []string{"written", "reopened"} {
		for _, cluster := range []string{east, west, ""} {
			s, err := open(store.Options{Cluster: cluster})
			if err != nil {
				t.Fatal(err)
			}
			if pass == "written" && cluster != "" {
				if err := s.Append(ctx, want[cluster], nil); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Cursor(ctx)
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want[cluster], got); diff != "" {
				t.Errorf("%s: cursor of cluster %q (-want +got):\n%s", pass, cluster, diff)
			}
		}
	}
}

// testClustersKeepSameUIDsAndSeqsApart: the same epoch, sequences and
// pod UIDs in two clusters are two clusters' records; re-appending
// either duplicates and overwrites nothing.
func testClustersKeepSameUIDsAndSeqsApart(t *testing.T, h Harness) {
	ctx := context.Background()
	e, w := h.clusters(t, store.Retention{})
	for range 2 { // the second time, every record is appended again
		st, err := e.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Attempts != 7 || st.Pods != 5 {
			t.Errorf("stats %+v, want east's 5 attempts and 3 pods and west's 2 and 2", st)
		}
		var split []v1alpha1.ClusterStoreStats
		for _, c := range st.Clusters {
			split = append(split, v1alpha1.ClusterStoreStats{Cluster: c.Cluster, Attempts: c.Attempts, Pods: c.Pods})
		}
		if diff := cmp.Diff([]v1alpha1.ClusterStoreStats{{Cluster: "east", Attempts: 5, Pods: 3}, {Cluster: "west", Attempts: 2, Pods: 2}}, split); diff != "" {
			t.Errorf("stats by cluster (-want +got):\n%s", diff)
		}
		type seq struct {
			Cluster string
			Seq     uint64
		}
		var got []seq
		sums, err := e.Attempts(ctx, store.PodSelector{UID: "uid-1"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range sums {
			got = append(got, seq{a.Cluster, a.Seq})
		}
		if diff := cmp.Diff([]seq{{west, 1}, {east, 3}, {east, 1}}, got); diff != "" {
			t.Errorf("attempts of uid-1 in every cluster, newest first (-want +got):\n%s", diff)
		}
		in := Fixture()
		for _, tt := range []struct {
			cluster string
			want    int
		}{{east, 2}, {west, 0}} {
			a, err := w.Attempt(ctx, store.PodSelector{Cluster: tt.cluster, Namespace: "a", Name: "p1"}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&in[tt.want], a); diff != "" {
				t.Errorf("latest attempt of a/p1 in %s (-want +got):\n%s", tt.cluster, diff)
			}
		}
		if err := e.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 5}, Fixture()); err != nil {
			t.Fatal(err)
		}
		if err := w.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 2}, Fixture()[:2]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Attempt(ctx, store.PodSelector{Cluster: west, UID: "uid-3"}, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("east's pod uid-3 asked in west: %v, want ErrNotFound", err)
	}
}

// testClustersFilterQueries: the pod lists, attempts and rejections keep
// one cluster's when asked, every cluster's otherwise, and each answer
// names its cluster.
func testClustersFilterQueries(t *testing.T, h Harness) {
	ctx := context.Background()
	e, w := h.clusters(t, store.Retention{})
	for _, tt := range []struct {
		name string
		opts store.PodListOptions
		want []string
	}{
		{name: "every cluster", want: []string{"east:a/p3", "east:b/p2", "east:a/p1", "west:b/p2", "west:a/p1"}},
		{name: "east", opts: store.PodListOptions{Cluster: east}, want: []string{"east:a/p3", "east:b/p2", "east:a/p1"}},
		{name: "west pending", opts: store.PodListOptions{Cluster: west, PendingOnly: true}, want: []string{"west:b/p2", "west:a/p1"}},
		{name: "pending in a", opts: store.PodListOptions{PendingOnly: true, Namespaces: []string{"a"}}, want: []string{"east:a/p3", "west:a/p1"}},
		{name: "no such cluster", opts: store.PodListOptions{Cluster: "north"}},
	} {
		t.Run("pods/"+tt.name, func(t *testing.T) {
			got, err := w.Pods(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, clusterPods(got)); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
		})
	}
	sums, err := e.Attempts(ctx, store.PodSelector{Cluster: west, Namespace: "b", Name: "p2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].Cluster != west || sums[0].Seq != 2 {
		t.Errorf("attempts of b/p2 in west: %+v, want west's seq 2 only", sums)
	}
	for _, tt := range []struct {
		cluster string
		want    []v1alpha1.RejectionCount
	}{
		{cluster: west, want: []v1alpha1.RejectionCount{{Key: "TaintToleration", Attempts: 2, Nodes: 3}, {Key: "NodeResourcesFit", Attempts: 1, Nodes: 1}}},
		{cluster: east, want: rejectionsByPlugin},
		{want: []v1alpha1.RejectionCount{
			{Key: "TaintToleration", Attempts: 4, Nodes: 6}, {Key: "NodeResourcesFit", Attempts: 3, Nodes: 4}, {Key: "NodeAffinity", Attempts: 1, Nodes: 2},
		}},
	} {
		got, err := e.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByPlugin, Cluster: tt.cluster})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("rejections in cluster %q (-want +got):\n%s", tt.cluster, diff)
		}
	}
}

// testClustersRetentionDoesNotMix: one cluster's retention removes that
// cluster's attempts only, however old or many the other's are.
func testClustersRetentionDoesNotMix(t *testing.T, h Harness) {
	ctx := context.Background()
	for _, tt := range []struct {
		name        string
		retention   store.Retention
		wantRemoved int
		wantEast    []uint64
	}{
		{name: "by age", retention: store.Retention{MaxAge: 2500 * time.Millisecond}, wantRemoved: 3, wantEast: []uint64{4, 5}},
		{name: "by count", retention: store.Retention{MaxAttempts: 2}, wantRemoved: 3, wantEast: []uint64{4, 5}},
		{name: "by count per namespace", retention: store.Retention{MaxAttemptsPerNamespace: 1}, wantRemoved: 3, wantEast: []uint64{4, 5}},
		{name: "by bytes", retention: store.Retention{MaxDiskBytes: 1}, wantRemoved: 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, w := h.clusters(t, tt.retention)
			// west's retention is unbounded: it removes nothing of east's.
			if n, err := w.Prune(ctx, recordtest.Base.Add(5*time.Second)); err != nil || n != 0 {
				t.Errorf("west's unbounded retention removed %d (%v), want 0", n, err)
			}
			removed, err := e.Prune(ctx, recordtest.Base.Add(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if removed != tt.wantRemoved {
				t.Errorf("removed %d, want %d of east's", removed, tt.wantRemoved)
			}
			got := map[string][]uint64{}
			pods, err := e.Pods(ctx, store.PodListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pods {
				sums, err := e.Attempts(ctx, store.PodSelector{Cluster: p.Cluster, UID: p.Pod.UID}, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range sums {
					got[a.Cluster] = append(got[a.Cluster], a.Seq)
				}
			}
			for _, seqs := range got {
				slices.Sort(seqs)
			}
			want := map[string][]uint64{west: {1, 2}}
			if tt.wantEast != nil {
				want[east] = tt.wantEast
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("kept sequences by cluster (-want +got):\n%s", diff)
			}
			rej, err := e.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByPlugin, Cluster: west})
			if err != nil {
				t.Fatal(err)
			}
			if len(rej) != 2 {
				t.Errorf("west's rejections after east's retention: %+v, want both plugins'", rej)
			}
		})
	}
}

// testClustersDeleteNamespace: a namespace deleted in one cluster keeps
// the same namespace's records of the other.
func testClustersDeleteNamespace(t *testing.T, h Harness) {
	ctx := context.Background()
	e, w := h.clusters(t, store.Retention{})
	removed, err := e.DeleteNamespace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if removed != 3 {
		t.Errorf("removed %d, want east's 3 attempts of namespace a", removed)
	}
	pods, err := w.Pods(ctx, store.PodListOptions{Namespaces: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"west:a/p1"}, clusterPods(pods)); diff != "" {
		t.Errorf("pods of namespace a (-want +got):\n%s", diff)
	}
	rej, err := w.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByPlugin, Namespaces: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]v1alpha1.RejectionCount{{Key: "TaintToleration", Attempts: 1, Nodes: 2}}, rej); diff != "" {
		t.Errorf("rejections in namespace a (-want +got):\n%s", diff)
	}
	for s, want := range map[store.Store][]string{e: {"b"}, w: {"a", "b"}} {
		got, err := s.Namespaces(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("namespaces (-want +got):\n%s", diff)
		}
	}
}

// CheckMigratedFixture asserts what a store of the unnamed cluster, s,
// migrated from a schema before clusters that held Fixture under cursor
// (e1, 5), answers: everything CheckFixture checks, each answer in the
// unnamed cluster; a pending pod's repeats fold into its stored attempt;
// and the store opened by openEast (for cluster east, reading every
// cluster) has a cursor of its own and stores the same epoch, sequences
// and UIDs beside the old records.
func CheckMigratedFixture(t *testing.T, s store.Store, openEast func() (store.Store, error)) {
	t.Helper()
	ctx := context.Background()
	CheckFixture(t, s)
	pods, err := s.Pods(ctx, store.PodListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{":a/p3", ":b/p2", ":a/p1"}, clusterPods(pods)); diff != "" {
		t.Errorf("pods after the migration, in the unnamed cluster (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]folded{{4, 2, 4}, {2, 0, 0}}, appendRepeats(t, s)); diff != "" {
		t.Errorf("attempts of b/p2, the repeats folded into the migrated attempt 2 (-want +got):\n%s", diff)
	}

	e, err := openEast()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if c, err := e.Cursor(ctx); err != nil || c != (v1alpha1.Cursor{}) {
		t.Errorf("east's cursor %+v, %v; want none", c, err)
	}
	if err := e.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 5}, Fixture()); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Cursor(ctx); err != nil || c != (v1alpha1.Cursor{Epoch: "e1", Seq: 7}) {
		t.Errorf("the unnamed cluster's cursor %+v, %v after east's; want (e1, 7)", c, err)
	}
	st, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts != 12 || st.Pods != 6 {
		t.Errorf("stats %+v, want 7 attempts of 3 pods in the unnamed cluster and 5 of 3 in east", st)
	}
	if len(st.Clusters) != 2 || st.Clusters[0].Cluster != "" || st.Clusters[0].Attempts != 7 || st.Clusters[1].Cluster != "east" || st.Clusters[1].Pods != 3 {
		t.Errorf("stats by cluster %+v, want the unnamed cluster's 7 attempts, then east's 3 pods", st.Clusters)
	}
	east, err := e.Pods(ctx, store.PodListOptions{Cluster: "east"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"east:a/p3", "east:b/p2", "east:a/p1"}, clusterPods(east)); diff != "" {
		t.Errorf("east's pods (-want +got):\n%s", diff)
	}
}

// testClustersServeTheirOwnOnly: a store not opened for every cluster
// reads its own cluster's records only, whatever cluster a query names.
func testClustersServeTheirOwnOnly(t *testing.T, h Harness) {
	ctx := context.Background()
	e, w := h.openClusters(t, store.Options{Cluster: east}, store.Options{Cluster: west})
	for _, tt := range []struct {
		name string
		s    store.Store
		opts store.PodListOptions
		want []string
	}{
		{name: "east, no cluster named", s: e, want: []string{"east:a/p3", "east:b/p2", "east:a/p1"}},
		{name: "west, no cluster named", s: w, want: []string{"west:b/p2", "west:a/p1"}},
		{name: "east asked for west", s: e, opts: store.PodListOptions{Cluster: west}},
		{name: "west asked for its own", s: w, opts: store.PodListOptions{Cluster: west, PendingOnly: true}, want: []string{"west:b/p2", "west:a/p1"}},
	} {
		t.Run("pods/"+tt.name, func(t *testing.T) {
			got, err := tt.s.Pods(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, clusterPods(got)); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
		})
	}
	sums, err := w.Attempts(ctx, store.PodSelector{UID: "uid-1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].Cluster != west {
		t.Errorf("attempts of uid-1 read by west: %+v, want west's one", sums)
	}
	if _, err := w.Attempt(ctx, store.PodSelector{Cluster: east, Namespace: "a", Name: "p3"}, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("east's a/p3 asked of west: %v, want ErrNotFound", err)
	}
	if _, err := w.Attempt(ctx, store.PodSelector{UID: "uid-3"}, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("east's uid-3 asked of west without a cluster: %v, want ErrNotFound", err)
	}
	for _, cluster := range []string{"", east} {
		got, err := w.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByPlugin, Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		want := []v1alpha1.RejectionCount{{Key: "TaintToleration", Attempts: 2, Nodes: 3}, {Key: "NodeResourcesFit", Attempts: 1, Nodes: 1}}
		if cluster == east {
			want = nil
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("rejections read by west, cluster %q asked (-want +got):\n%s", cluster, diff)
		}
	}
	st, err := w.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Clusters) != 1 || st.Clusters[0].Cluster != west || st.Attempts != 2 {
		t.Errorf("west's stats %+v, want west's 2 attempts only", st)
	}
}

// testClustersSilentAreRemoved: a writer that applies retention notes its
// cluster alive (a cluster no writer has noted yet is noted alive then);
// a cluster silent for longer than RemoveSilentClustersAfter loses every
// record and its cursor, one silent for less and the writer's own none.
func testClustersSilentAreRemoved(t *testing.T, h Harness) {
	ctx := context.Background()
	silence := time.Hour
	e, w := h.openClusters(t, store.Options{Cluster: east, AllClusters: true, Retention: store.Retention{RemoveSilentClustersAfter: silence}},
		store.Options{Cluster: west, AllClusters: true})
	t0 := recordtest.Base.Add(24 * time.Hour)
	clusters := func() []string {
		t.Helper()
		pods, err := e.Pods(ctx, store.PodListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return clusterPods(pods)
	}
	all := []string{"east:a/p3", "east:b/p2", "east:a/p1", "west:b/p2", "west:a/p1"}
	for _, step := range []struct {
		name    string
		s       store.Store
		now     time.Time
		removed int
		want    []string
	}{
		{name: "east first applies retention: west, never noted, is noted alive", s: e, now: t0, want: all},
		{name: "west silent for just under the bound", s: e, now: t0.Add(silence - time.Second), want: all},
		{name: "west's writer applies retention", s: w, now: t0.Add(30 * time.Minute), want: all},
		{name: "an hour after west's first note, but not after its last", s: e, now: t0.Add(silence + time.Second), want: all},
		{name: "west silent for longer than the bound", s: e, now: t0.Add(30*time.Minute + silence + time.Second), removed: 2, want: all[:3]},
	} {
		removed, err := step.s.Prune(ctx, step.now)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if removed != step.removed {
			t.Errorf("%s: removed %d, want %d", step.name, removed, step.removed)
		}
		if diff := cmp.Diff(step.want, clusters()); diff != "" {
			t.Errorf("%s: pods (-want +got):\n%s", step.name, diff)
		}
	}
	if got, err := e.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByPlugin, Cluster: west}); err != nil || len(got) != 0 {
		t.Errorf("west's rejections after its removal: %v (%v), want none", got, err)
	}
	if c, err := w.Cursor(ctx); err != nil || c != (v1alpha1.Cursor{}) {
		t.Errorf("west's cursor after its removal: %+v (%v), want none", c, err)
	}
	st, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Clusters) != 1 || st.Clusters[0].Cluster != east || st.Clusters[0].Attempts != 5 {
		t.Errorf("stats by cluster after west's removal %+v, want east's 5 attempts alone", st.Clusters)
	}
}

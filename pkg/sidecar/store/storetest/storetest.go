package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/stream"
)

// Harness is how the suite reaches a store.
type Harness struct {
	// New makes one new, empty database and returns how to open it. open
	// may be called again, after the store it returned is closed or
	// while it is open (for another cluster): it opens the same database.
	New func(t *testing.T) (open func(store.Options) (store.Store, error))
	// RetainedBytes returns what the store's Retention.MaxDiskBytes bounds.
	RetainedBytes func(t *testing.T, s store.Store) int64
}

// Run runs the conformance suite against h's store.
func Run(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Harness)
	}{
		{"Attempts", testAttempts},
		{"Attempt", testAttempt},
		{"Pods", testPods},
		{"Rejections", testRejections},
		{"ShadowSummary", testShadowSummary},
		{"ShadowRunsGoWithTheirAttempts", testShadowRunsGoWithTheirAttempts},
		{"CursorAndRecordsSurviveReopen", testCursorAndRecordsSurviveReopen},
		{"AppendIgnoresStoredRecords", testAppendIgnoresStoredRecords},
		{"AppendStoresTheSchedulersJSON", testAppendStoresTheSchedulersJSON},
		{"LargeAttemptIsCompact", testLargeAttemptIsCompact},
		{"FoldRepeats", testFoldRepeats},
		{"Prune", testPrune},
		{"PruneKeepsBytesUnderMaxDiskBytes", testPruneKeepsBytesUnderMaxDiskBytes},
		{"PruneByCountIsFair", testPruneByCountIsFair},
		{"PruneByBytesIsFair", testPruneByBytesIsFair},
		{"DeleteNamespace", testDeleteNamespace},
		{"ClusterNameIsValidated", testClusterNameIsValidated},
		{"ClustersHaveTheirOwnCursors", testClustersHaveTheirOwnCursors},
		{"ClustersKeepSameUIDsAndSeqsApart", testClustersKeepSameUIDsAndSeqsApart},
		{"ClustersFilterQueries", testClustersFilterQueries},
		{"ClustersServeTheirOwnOnly", testClustersServeTheirOwnOnly},
		{"ClustersSilentAreRemoved", testClustersSilentAreRemoved},
		{"ClustersRetentionDoesNotMix", testClustersRetentionDoesNotMix},
		{"ClustersDeleteNamespace", testClustersDeleteNamespace},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, h) })
	}
}

// open opens a new store with retention r, closed when the test ends.
func (h Harness) open(t *testing.T, r store.Retention) store.Store {
	t.Helper()
	s, err := h.New(t)(store.Options{Retention: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// withFixture opens a new store holding Fixture under cursor (e1, 5).
func (h Harness) withFixture(t *testing.T, r store.Retention) store.Store {
	t.Helper()
	s := h.open(t, r)
	if err := s.Append(context.Background(), v1alpha1.Cursor{Epoch: "e1", Seq: 5}, Fixture()); err != nil {
		t.Fatal(err)
	}
	return s
}

// Fixture is five attempts, sequences 1 to 5: pod a/p1 failed once then
// scheduled; pod b/p2 pending (twice rejected); pod a/p3 pending.
func Fixture() []stream.Record {
	t0 := recordtest.Base
	return stream.Records(1,
		recordtest.MakeAttempt("a", "p1", "uid-1").Finished(t0).Unschedulable("0/2 nodes are available").
			Rejected("TaintToleration", "untolerated taint", "n1", "n2").Obj(),
		recordtest.MakeAttempt("b", "p2", "uid-2").Finished(t0.Add(time.Second)).Unschedulable("0/2 nodes are available").
			Rejected("NodeResourcesFit", "Insufficient cpu", "n1").Rejected("TaintToleration", "untolerated taint", "n2").Obj(),
		recordtest.MakeAttempt("a", "p1", "uid-1").Number(2).Finished(t0.Add(2*time.Second)).Passed("n1", "n2").Scheduled("n1").Obj(),
		recordtest.MakeAttempt("b", "p2", "uid-2").Number(2).Finished(t0.Add(3*time.Second)).Unschedulable("0/2 nodes are available").
			Rejected("NodeResourcesFit", "Insufficient cpu", "n1", "n2").Obj(),
		recordtest.MakeAttempt("a", "p3", "uid-3").Finished(t0.Add(4*time.Second)).Unschedulable("0/2 nodes are available").
			Rejected("NodeAffinity", "didn't match", "n1", "n2").Obj(),
	)
}

// CheckFixture asserts that s answers every Reader query as a store
// holding Fixture under cursor (e1, 5) does; migration tests call it on
// a database an older schema wrote.
func CheckFixture(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	c, err := s.Cursor(ctx)
	if err != nil || c.Epoch != "e1" || c.Seq != 5 {
		t.Errorf("cursor %+v, %v; want (e1, 5)", c, err)
	}
	checkAttempts(t, s)
	checkPods(t, s)
	got, err := s.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByPlugin})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rejectionsByPlugin, got); diff != "" {
		t.Errorf("rejections by plugin (-want +got):\n%s", diff)
	}
	want := Fixture()[2]
	a, err := s.Attempt(ctx, store.PodSelector{Namespace: "a", Name: "p1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want, a); diff != "" {
		t.Errorf("latest attempt of a/p1 (-want +got):\n%s", diff)
	}
}

// CheckUnsignedFixture asserts what a store migrated from schema version
// 1 (before folding) that held Fixture under cursor (e1, 5) answers:
// everything CheckFixture checks; and, since the attempts stored before
// the migration carry no outcome signature, a pending pod's first repeat
// after it is stored and the next ones fold into that.
func CheckUnsignedFixture(t *testing.T, s store.Store) {
	t.Helper()
	CheckFixture(t, s)
	if diff := cmp.Diff([]folded{{6, 1, 4}, {4, 0, 0}, {2, 0, 0}}, appendRepeats(t, s)); diff != "" {
		t.Errorf("attempts of b/p2 (-want +got):\n%s", diff)
	}
}

// folded is what an attempt's summary says of the repeats folded into it.
type folded struct {
	Seq                  uint64
	Repeats, LastAttempt int
}

// appendRepeats stores attempts 3 and 4 of pod b/p2 of Fixture, repeats
// of its attempt 2's outcome, as sequences 6 and 7 of epoch e1, and
// returns the pod's attempts then, newest first.
func appendRepeats(t *testing.T, s store.Store) []folded {
	t.Helper()
	ctx := context.Background()
	repeat := func(n int) *record.Attempt {
		return recordtest.MakeAttempt("b", "p2", "uid-2").Number(n).Finished(recordtest.Base.Add(time.Duration(n)*time.Second)).
			Unschedulable("0/2 nodes are available").Rejected("NodeResourcesFit", "Insufficient cpu", "n1", "n2").Obj()
	}
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 7}, stream.Records(6, repeat(3), repeat(4))); err != nil {
		t.Fatal(err)
	}
	sums, err := s.Attempts(ctx, store.PodSelector{UID: "uid-2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []folded
	for _, a := range sums {
		out = append(out, folded{a.Seq, a.Repeats, a.LastAttempt})
	}
	return out
}

var rejectionsByPlugin = []v1alpha1.RejectionCount{
	{Key: "NodeResourcesFit", Attempts: 2, Nodes: 3},
	{Key: "TaintToleration", Attempts: 2, Nodes: 3},
	{Key: "NodeAffinity", Attempts: 1, Nodes: 2},
}

func testAttempts(t *testing.T, h Harness) {
	checkAttempts(t, h.withFixture(t, store.Retention{}))
}

func checkAttempts(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	tests := []struct {
		name    string
		pod     store.PodSelector
		limit   int
		wantSeq []uint64
	}{
		{name: "by name, newest first", pod: store.PodSelector{Namespace: "a", Name: "p1"}, wantSeq: []uint64{3, 1}},
		{name: "by uid", pod: store.PodSelector{UID: "uid-2"}, wantSeq: []uint64{4, 2}},
		{name: "limit", pod: store.PodSelector{UID: "uid-2"}, limit: 1, wantSeq: []uint64{4}},
		{name: "same name other namespace", pod: store.PodSelector{Namespace: "b", Name: "p1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Attempts(ctx, tt.pod, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var gotSeq []uint64
			for _, a := range got {
				gotSeq = append(gotSeq, a.Seq)
				if a.Epoch != "e1" || a.StoredBytes == 0 {
					t.Errorf("summary %d: epoch %q, stored bytes %d; want epoch e1 and a size", a.Seq, a.Epoch, a.StoredBytes)
				}
			}
			if diff := cmp.Diff(tt.wantSeq, gotSeq); diff != "" {
				t.Errorf("sequences (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := s.Attempts(ctx, store.PodSelector{Namespace: "a"}, 0); err == nil {
		t.Error("Attempts of a pod named by its namespace alone: no error")
	}
}

func testAttempt(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.withFixture(t, store.Retention{})
	in := Fixture()
	tests := []struct {
		name    string
		pod     store.PodSelector
		number  int
		want    *stream.Record
		wantErr error
	}{
		{name: "latest", pod: store.PodSelector{Namespace: "a", Name: "p1"}, want: &in[2]},
		{name: "by number", pod: store.PodSelector{Namespace: "a", Name: "p1"}, number: 1, want: &in[0]},
		{name: "by uid", pod: store.PodSelector{UID: "uid-3"}, want: &in[4]},
		{name: "unknown pod", pod: store.PodSelector{Namespace: "a", Name: "nope"}, wantErr: store.ErrNotFound},
		{name: "unknown number", pod: store.PodSelector{Namespace: "a", Name: "p1"}, number: 7, wantErr: store.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Attempt(ctx, tt.pod, tt.number)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

func testPods(t *testing.T, h Harness) {
	checkPods(t, h.withFixture(t, store.Retention{}))
}

func checkPods(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	tests := []struct {
		name string
		opts store.PodListOptions
		want []string
	}{
		{name: "all, latest first", opts: store.PodListOptions{}, want: []string{"a/p3", "b/p2", "a/p1"}},
		{name: "pending", opts: store.PodListOptions{PendingOnly: true}, want: []string{"a/p3", "b/p2"}},
		{name: "pending in b", opts: store.PodListOptions{PendingOnly: true, Namespaces: []string{"b"}}, want: []string{"b/p2"}},
		{name: "pending in a and b", opts: store.PodListOptions{PendingOnly: true, Namespaces: []string{"a", "b"}}, want: []string{"a/p3", "b/p2"}},
		{name: "no namespace allowed", opts: store.PodListOptions{Namespaces: []string{}}, want: nil},
		{name: "limit", opts: store.PodListOptions{Limit: 1}, want: []string{"a/p3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Pods(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, podNames(got)); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
		})
	}
	pending, err := s.Pods(ctx, store.PodListOptions{PendingOnly: true, Namespaces: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	wantReasons := []v1alpha1.RejectionSummary{{Plugin: "NodeResourcesFit", Reasons: []string{"Insufficient cpu"}, Nodes: 2}}
	if diff := cmp.Diff(wantReasons, pending[0].Latest.Reasons); diff != "" {
		t.Errorf("latest reasons of b/p2 (-want +got):\n%s", diff)
	}
	if got, want := pending[0].FirstSeen, recordtest.Base.Add(time.Second); !got.Equal(want) {
		t.Errorf("first seen %v, want %v", got, want)
	}
	ns, err := s.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, ns); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
}

func podNames(pods []v1alpha1.PodStatus) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Pod.Namespace+"/"+p.Pod.Name)
	}
	return names
}

func testRejections(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.withFixture(t, store.Retention{})
	tests := []struct {
		name    string
		q       store.RejectionQuery
		want    []v1alpha1.RejectionCount
		wantErr bool
	}{
		{name: "by plugin", q: store.RejectionQuery{By: v1alpha1.ByPlugin}, want: rejectionsByPlugin},
		{
			name: "by plugin since",
			q:    store.RejectionQuery{By: v1alpha1.ByPlugin, Since: recordtest.Base.Add(3 * time.Second)},
			want: []v1alpha1.RejectionCount{
				{Key: "NodeAffinity", Attempts: 1, Nodes: 2},
				{Key: "NodeResourcesFit", Attempts: 1, Nodes: 2},
			},
		},
		{
			name: "by node in namespace b",
			q:    store.RejectionQuery{By: v1alpha1.ByNode, Namespaces: []string{"b"}},
			want: []v1alpha1.RejectionCount{
				{Key: "n1", Attempts: 2, Nodes: 2, Plugins: map[string]int64{"NodeResourcesFit": 2}},
				{Key: "n2", Attempts: 2, Nodes: 2, Plugins: map[string]int64{"NodeResourcesFit": 1, "TaintToleration": 1}},
			},
		},
		{name: "in no namespace", q: store.RejectionQuery{By: v1alpha1.ByPlugin, Namespaces: []string{}}, want: []v1alpha1.RejectionCount{}},
		{
			name: "by node, series",
			q:    store.RejectionQuery{By: v1alpha1.ByNode, Since: recordtest.Base, Until: recordtest.Base.Add(4 * time.Second), Step: 2 * time.Second, Limit: 1},
			want: []v1alpha1.RejectionCount{
				// n1 was rejected by TaintToleration at 0s and by NodeResourcesFit at 1s
				// and 3s (n2 as often, and comes second by name).
				{Key: "n1", Attempts: 3, Nodes: 3, Plugins: map[string]int64{"NodeResourcesFit": 2, "TaintToleration": 1}, Series: []v1alpha1.RejectionBucket{
					{Start: recordtest.Base, Attempts: 2, Nodes: 2},
					{Start: recordtest.Base.Add(2 * time.Second), Attempts: 1, Nodes: 1},
				}},
			},
		},
		{
			name: "by node, limit",
			q:    store.RejectionQuery{By: v1alpha1.ByNode, Until: recordtest.Base.Add(500 * time.Millisecond), Limit: 1},
			want: []v1alpha1.RejectionCount{
				{Key: "n1", Attempts: 1, Nodes: 1, Plugins: map[string]int64{"TaintToleration": 1}},
			},
		},
		{name: "step without a window", q: store.RejectionQuery{By: v1alpha1.ByPlugin, Step: time.Second}, wantErr: true},
		{name: "unknown grouping", q: store.RejectionQuery{By: "pod"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Rejections(ctx, tt.q)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rejections (-want +got):\n%s", diff)
			}
		})
	}
}

func testCursorAndRecordsSurviveReopen(t *testing.T, h Harness) {
	ctx := context.Background()
	open := h.New(t)
	s, err := open(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Cursor(ctx); err != nil || c != (v1alpha1.Cursor{}) {
		t.Fatalf("new store cursor %+v, %v; want zero", c, err)
	}
	want := v1alpha1.Cursor{Epoch: "e1", Seq: 5, Lost: 42}
	if err := s.Append(ctx, want, Fixture()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := open(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Cursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cursor (-want +got):\n%s", diff)
	}
	st, err := s2.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts != 5 || st.Pods != 3 {
		t.Errorf("stats %+v, want 5 attempts of 3 pods", st)
	}
	// A cursor stored alone moves on, records untouched.
	if err := s2.Append(ctx, v1alpha1.Cursor{Epoch: "e2", Lost: 43}, nil); err != nil {
		t.Fatal(err)
	}
	if c, err := s2.Cursor(ctx); err != nil || c != (v1alpha1.Cursor{Epoch: "e2", Lost: 43}) {
		t.Errorf("cursor %+v, %v after storing (e2, 0, lost 43) alone", c, err)
	}
}

// testAppendIgnoresStoredRecords: a replay overlapping what is stored
// duplicates nothing; the cursor is the last one appended.
func testAppendIgnoresStoredRecords(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t, store.Retention{})
	in := Fixture()
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 3}, in[:3]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 5}, in[1:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 5}, in); err != nil {
		t.Fatal(err)
	}
	CheckFixture(t, s)
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts != 5 {
		t.Errorf("stored %d attempts, want 5", st.Attempts)
	}
	// The same sequence in another epoch is another record.
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e2", Seq: 1}, stream.Records(1, recordtest.MakeAttempt("c", "p9", "uid-9").Obj())); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(ctx); st.Attempts != 6 {
		t.Errorf("stored %d attempts after a new epoch, want 6", st.Attempts)
	}
}

// testAppendStoresTheSchedulersJSON: the follower hands over the
// scheduler's JSON and the record decoded without its scores; the store
// keeps the JSON and answers the full record.
func testAppendStoresTheSchedulersJSON(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t, store.Retention{})
	full := recordtest.MakeAttempt("ns", "p", "uid").Rejected("TaintToleration", "taint", "n2").Passed("n1").
		Scores([]string{"ImageLocality"}, map[string][]int64{"n1": {7}}).Scheduled("n1").Obj()
	raw, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	partial := *full
	partial.Scores = nil
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 1}, []stream.Record{{Seq: 1, TraceID: "0af7651916cd43dd8448eb211c80319c", Attempt: &partial, JSON: raw}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Attempt(ctx, store.PodSelector{UID: "uid"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&stream.Record{Seq: 1, TraceID: "0af7651916cd43dd8448eb211c80319c", Attempt: full}, got); diff != "" {
		t.Errorf("stored record (-want +got):\n%s", diff)
	}
	rej, err := s.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByNode})
	if err != nil {
		t.Fatal(err)
	}
	if len(rej) != 1 || rej[0].Key != "n2" {
		t.Errorf("rejections %+v, want n2 indexed", rej)
	}
}

func testLargeAttemptIsCompact(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t, store.Retention{})
	a := recordtest.Large(1, 5000)
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 1}, stream.Records(1, a)); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The JSON of this record is about 1 MB.
	const limit = 200 << 10
	if st.Bytes > limit || st.Bytes == 0 {
		t.Errorf("a 5000-node attempt takes %d bytes, want some and at most %d", st.Bytes, limit)
	}
	if st.DiskBytes < st.Bytes {
		t.Errorf("the store counts %d bytes on disk for %d bytes of records", st.DiskBytes, st.Bytes)
	}
	got, err := s.Attempt(ctx, store.PodSelector{UID: a.Pod.UID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&stream.Record{Seq: 1, Attempt: a}, got); diff != "" {
		t.Errorf("record after a round trip (-want +got):\n%s", diff)
	}
}

// testFoldRepeats: attempts of a pod that repeat its latest unschedulable
// outcome are stored once, with a count and the last of them; a different
// outcome, a success or a new epoch starts a new stored attempt; re-appended
// records fold nothing twice; the rejection totals count every attempt.
func testFoldRepeats(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t, store.Retention{})
	t0 := recordtest.Base
	attempt := func(n int, reason string) *record.Attempt {
		a := recordtest.MakeAttempt("ns", "p", "uid-1").Number(n).Finished(t0.Add(time.Duration(n)*time.Second)).
			Unschedulable("0/2 nodes are available").Rejected("NodeAffinity", reason, "n1", "n2").Obj()
		return a
	}
	scheduled := recordtest.MakeAttempt("ns", "p", "uid-1").Number(6).Finished(t0.Add(6 * time.Second)).Passed("n1").Scheduled("n1").Obj()
	all := stream.Records(1, attempt(1, "x"), attempt(2, "x"), attempt(3, "x"), attempt(4, "y"), attempt(5, "y"), scheduled)
	for _, batch := range [][]stream.Record{all[:2], all[2:], all} { // the last re-appends everything
		if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 6}, batch); err != nil {
			t.Fatal(err)
		}
	}
	sums, err := s.Attempts(ctx, store.PodSelector{UID: "uid-1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	type folded struct{ Attempt, Repeats, LastAttempt int }
	var got []folded
	for _, a := range sums {
		got = append(got, folded{a.Attempt, a.Repeats, a.LastAttempt})
	}
	if diff := cmp.Diff([]folded{{6, 0, 0}, {4, 1, 5}, {1, 2, 3}}, got); diff != "" {
		t.Fatalf("stored attempts (-want +got):\n%s", diff)
	}
	if want := t0.Add(3 * time.Second); !sums[2].LastFinished.Equal(want) {
		t.Errorf("attempts 1-3 last finished %v, want %v", sums[2].LastFinished, want)
	}
	for number, want := range map[int]int{2: 1, 3: 1, 5: 4, 6: 6} {
		a, err := s.Attempt(ctx, store.PodSelector{UID: "uid-1"}, number)
		if err != nil || a.Attempt.Attempt != want {
			t.Errorf("Attempt(%d): attempt %v, %v; want the stored attempt %d", number, a, err, want)
		}
	}
	if _, err := s.Attempt(ctx, store.PodSelector{UID: "uid-1"}, 7); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Attempt(7): %v, want ErrNotFound", err)
	}
	rej, err := s.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByPlugin})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]v1alpha1.RejectionCount{{Key: "NodeAffinity", Attempts: 5, Nodes: 10}}, rej); diff != "" {
		t.Errorf("rejections count every attempt (-want +got):\n%s", diff)
	}

	// The same outcome after the scheduler restarted (a new epoch) is a
	// new stored attempt: sequences of two epochs do not compare.
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e2", Seq: 1}, stream.Records(1, attempt(7, "y"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e2", Seq: 2}, stream.Records(2, attempt(8, "y"))); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts != 8 || st.Folded != 4 {
		t.Errorf("%d attempts, %d folded; want all 8, 4 folded (attempt 8 into 7 of the new epoch)", st.Attempts, st.Folded)
	}
}

func testPrune(t *testing.T, h Harness) {
	ctx := context.Background()
	tests := []struct {
		name        string
		retention   store.Retention
		now         time.Time
		wantRemoved int
		wantSeqs    []uint64
		wantPods    []string
	}{
		{
			name:        "by age",
			retention:   store.Retention{MaxAge: 2500 * time.Millisecond},
			now:         recordtest.Base.Add(5 * time.Second),
			wantRemoved: 3,
			wantSeqs:    []uint64{4, 5},
			wantPods:    []string{"a/p3", "b/p2"},
		},
		{
			name:        "by count",
			retention:   store.Retention{MaxAttempts: 2},
			now:         recordtest.Base,
			wantRemoved: 3,
			wantSeqs:    []uint64{4, 5},
			wantPods:    []string{"a/p3", "b/p2"},
		},
		{
			name:        "by bytes",
			retention:   store.Retention{MaxDiskBytes: 1},
			now:         recordtest.Base,
			wantRemoved: 5,
		},
		{
			name:        "by count per namespace",
			retention:   store.Retention{MaxAttemptsPerNamespace: 2},
			now:         recordtest.Base,
			wantRemoved: 1,
			wantSeqs:    []uint64{2, 3, 4, 5},
			wantPods:    []string{"a/p3", "b/p2", "a/p1"},
		},
		{
			name:      "nothing to do",
			retention: store.Retention{MaxAge: time.Hour, MaxAttempts: 10, MaxAttemptsPerNamespace: 3, MaxDiskBytes: 64 << 20},
			now:       recordtest.Base,
			wantSeqs:  []uint64{1, 2, 3, 4, 5},
			wantPods:  []string{"a/p3", "b/p2", "a/p1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := h.withFixture(t, tt.retention)
			removed, err := s.Prune(ctx, tt.now)
			if err != nil {
				t.Fatal(err)
			}
			if removed != tt.wantRemoved {
				t.Errorf("removed %d, want %d", removed, tt.wantRemoved)
			}
			var gotSeqs []uint64
			for _, sel := range []store.PodSelector{{UID: "uid-1"}, {UID: "uid-2"}, {UID: "uid-3"}} {
				as, err := s.Attempts(ctx, sel, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range as {
					gotSeqs = append(gotSeqs, a.Seq)
				}
			}
			slices.Sort(gotSeqs)
			if diff := cmp.Diff(tt.wantSeqs, gotSeqs); diff != "" {
				t.Errorf("kept sequences (-want +got):\n%s", diff)
			}
			pods, err := s.Pods(ctx, store.PodListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantPods, podNames(pods)); diff != "" {
				t.Errorf("kept pods (-want +got):\n%s", diff)
			}
			rej, err := s.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByPlugin})
			if err != nil {
				t.Fatal(err)
			}
			var rejected int64
			for _, r := range rej {
				rejected += r.Attempts
			}
			var want int64
			for _, seq := range tt.wantSeqs {
				want += map[uint64]int64{1: 1, 2: 2, 3: 0, 4: 1, 5: 1}[seq]
			}
			if rejected != want {
				t.Errorf("rejection rows of kept attempts: %d, want %d", rejected, want)
			}
		})
	}
}

// testPruneKeepsBytesUnderMaxDiskBytes: after retention the bytes the
// store bounds are within MaxDiskBytes, and the newest attempts are kept.
func testPruneKeepsBytesUnderMaxDiskBytes(t *testing.T, h Harness) {
	ctx := context.Background()
	const limit = 1 << 20
	s := h.open(t, store.Retention{MaxDiskBytes: limit})
	nodes := recordtest.NodeNames("node", 0, 300)
	const total = 3000
	for batch := range total / 100 {
		var records []*record.Attempt
		for i := range 100 {
			n := batch*100 + i
			a := recordtest.MakeAttempt("ns", fmt.Sprint("p", n), fmt.Sprint("uid-", n)).Unschedulable("0/300 nodes are available").
				Rejected("NodeAffinity", fmt.Sprintf("didn't match, attempt %d", n), nodes...).Obj()
			records = append(records, a)
		}
		if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: uint64((batch + 1) * 100)}, stream.Records(uint64(batch*100+1), records...)); err != nil {
			t.Fatal(err)
		}
	}
	before := h.RetainedBytes(t, s)
	if before <= limit {
		t.Fatalf("the store holds %d bytes before retention, want more than %d for the test to mean anything", before, limit)
	}
	removed, err := s.Prune(ctx, recordtest.Base)
	if err != nil {
		t.Fatal(err)
	}
	after := h.RetainedBytes(t, s)
	if after > limit {
		t.Errorf("%d bytes after retention (%d before, %d attempts removed), want at most %d", after, before, removed, limit)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts == 0 || st.Attempts+int64(removed) != total {
		t.Errorf("%d attempts kept and %d removed, want some kept and %d in all", st.Attempts, removed, total)
	}
	if _, err := s.Attempt(ctx, store.PodSelector{UID: fmt.Sprint("uid-", total-1)}, 0); err != nil {
		t.Errorf("the newest attempt was not kept: %v", err)
	}
	t.Logf("%d bytes before, %d after; %d of %d attempts removed", before, after, removed, total)
}

// testDeleteNamespace: deleting namespace a removes its attempts, pods and
// rejections, and nothing of namespace b.
func testDeleteNamespace(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.withFixture(t, store.Retention{})
	removed, err := s.DeleteNamespace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if removed != 3 {
		t.Errorf("removed %d attempts, want namespace a's 3", removed)
	}
	nss, err := s.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b"}, nss); diff != "" {
		t.Errorf("namespaces left (-want +got):\n%s", diff)
	}
	for _, sel := range []store.PodSelector{{Namespace: "a", Name: "p1"}, {UID: "uid-3"}} {
		if _, err := s.Attempt(ctx, sel, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("attempt of %+v after its namespace was deleted: %v, want ErrNotFound", sel, err)
		}
	}
	rejections, err := s.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByPlugin})
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.RejectionCount{{Key: "NodeResourcesFit", Attempts: 2, Nodes: 3}, {Key: "TaintToleration", Attempts: 1, Nodes: 1}}
	if diff := cmp.Diff(want, rejections); diff != "" {
		t.Errorf("rejections left, namespace b's only (-want +got):\n%s", diff)
	}
	stats, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Attempts != 2 || stats.Pods != 1 {
		t.Errorf("stats %+v, want namespace b's 2 attempts of 1 pod", stats)
	}
}

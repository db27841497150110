package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/stream"
)

// ShadowFixture is four attempts of the profile default-scheduler, each
// with runs of its shadows binpack and strict, finished a second apart
// from recordtest.Base: a/p1 scheduled on n1 (binpack would have chosen
// n2, its NodeResourcesFit rejecting n1; strict n1 too); b/p2 scheduled on
// n2 (binpack found no node, its NodeAffinity rejecting n2; strict not
// compared: the snapshot changed); a/p3 unschedulable twice with one
// outcome, the second a repeat that folds into the first (binpack chose
// n2, which the live TaintToleration rejected; strict found no node, then
// ended in an error).
func ShadowFixture() []*record.Attempt {
	t0 := recordtest.Base
	shadow := func(profile string) *recordtest.Wrapper {
		return recordtest.MakeAttempt("", "", "").Profile(profile)
	}
	p3 := func(n int, strict record.ShadowRun) *record.Attempt {
		a := recordtest.MakeAttempt("a", "p3", "uid-3").Number(n).Finished(t0.Add(time.Duration(n+1)*time.Second)).
			Unschedulable("0/2 nodes are available").Rejected("TaintToleration", "untolerated taint", "n1", "n2").Obj()
		a.Shadows = []record.ShadowRun{
			{Profile: "binpack", Outcome: record.ShadowShadowOnly, Attempt: shadow("binpack").Passed("n2").Rejected("TaintToleration", "untolerated taint", "n1").Scheduled("n2").Obj()},
			strict,
		}
		return a
	}
	p1 := recordtest.MakeAttempt("a", "p1", "uid-1").Finished(t0).Passed("n1", "n2").Scheduled("n1").Obj()
	p1.Shadows = []record.ShadowRun{
		{Profile: "binpack", Outcome: record.ShadowOtherNode, Attempt: shadow("binpack").Passed("n2").Rejected("NodeResourcesFit", "Insufficient cpu", "n1").Scheduled("n2").Obj()},
		{Profile: "strict", Outcome: record.ShadowSameNode, Attempt: shadow("strict").Passed("n1", "n2").Scheduled("n1").Obj()},
	}
	p2 := recordtest.MakeAttempt("b", "p2", "uid-2").Finished(t0.Add(time.Second)).Passed("n2").Scheduled("n2").Obj()
	p2.Shadows = []record.ShadowRun{
		{Profile: "binpack", Outcome: record.ShadowLiveOnly, Attempt: shadow("binpack").Rejected("NodeAffinity", "didn't match", "n2").Unschedulable("0/1 nodes are available").Obj()},
		{Profile: "strict", Outcome: record.ShadowNotCompared, NotComparedReason: record.NotComparedSnapshotChanged},
	}
	return []*record.Attempt{
		p1, p2,
		p3(1, record.ShadowRun{Profile: "strict", Outcome: record.ShadowNeither, Attempt: shadow("strict").Rejected("TaintToleration", "untolerated taint", "n1", "n2").Unschedulable("0/2 nodes are available").Obj()}),
		p3(2, record.ShadowRun{Profile: "strict", Outcome: record.ShadowNotCompared, NotComparedReason: record.NotComparedShadowError}),
	}
}

// binpackSummary is binpack's summary of ShadowFixture.
var binpackSummary = v1alpha1.ShadowSummary{
	Shadow: "binpack", Compared: 4, OtherNode: 1, OnlyLiveFits: 1, OnlyShadowFits: 2,
	TopPlugins: []v1alpha1.PluginCount{{Plugin: "TaintToleration", Count: 2}, {Plugin: "NodeAffinity", Count: 1}, {Plugin: "NodeResourcesFit", Count: 1}},
}

// CheckShadows appends ShadowFixture to s as sequences from first of
// epoch, and asserts that binpack's summary counts its runs, the folded
// repeat's included, and that binpack is known as a shadow of
// default-scheduler in s's cluster, the unnamed one.
func CheckShadows(t *testing.T, s store.Store, epoch string, first uint64) {
	t.Helper()
	ctx := context.Background()
	fixture := ShadowFixture()
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: epoch, Seq: first + uint64(len(fixture)) - 1}, stream.Records(first, fixture...)); err != nil {
		t.Fatal(err)
	}
	got, err := s.ShadowSummary(ctx, store.ShadowQuery{Shadow: "binpack"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(binpackSummary, got); diff != "" {
		t.Errorf("binpack's summary (-want +got):\n%s", diff)
	}
	if live, err := s.ShadowOf(ctx, "", "binpack"); err != nil || live != "default-scheduler" {
		t.Errorf("ShadowOf(binpack) = %q, %v; want default-scheduler", live, err)
	}
}

func testShadowSummary(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.open(t, store.Retention{})
	CheckShadows(t, s, "e1", 1)
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts != 4 || st.Folded != 1 {
		t.Fatalf("%d attempts, %d folded; want 4, the last folded into the third", st.Attempts, st.Folded)
	}
	t0 := recordtest.Base
	strict := v1alpha1.ShadowSummary{
		Shadow: "strict", Compared: 2, SameNode: 1, Neither: 1, NotCompared: 2,
		NotComparedReasons: []v1alpha1.ReasonCount{{Reason: record.NotComparedSnapshotChanged, Count: 1}, {Reason: record.NotComparedShadowError, Count: 1}},
	}
	tests := []struct {
		name string
		q    store.ShadowQuery
		want v1alpha1.ShadowSummary
	}{
		{name: "binpack", q: store.ShadowQuery{Shadow: "binpack"}, want: binpackSummary},
		{name: "strict", q: store.ShadowQuery{Shadow: "strict"}, want: strict},
		{
			name: "binpack in namespace a",
			q:    store.ShadowQuery{Shadow: "binpack", Namespaces: []string{"a"}},
			want: v1alpha1.ShadowSummary{Shadow: "binpack", Compared: 3, OtherNode: 1, OnlyShadowFits: 2,
				TopPlugins: []v1alpha1.PluginCount{{Plugin: "TaintToleration", Count: 2}, {Plugin: "NodeResourcesFit", Count: 1}}},
		},
		{
			name: "binpack in a window",
			q:    store.ShadowQuery{Shadow: "binpack", Since: t0.Add(time.Second), Until: t0.Add(3 * time.Second)},
			want: v1alpha1.ShadowSummary{Shadow: "binpack", Since: t0.Add(time.Second), Until: t0.Add(3 * time.Second), Compared: 2, OnlyLiveFits: 1, OnlyShadowFits: 1,
				TopPlugins: []v1alpha1.PluginCount{{Plugin: "NodeAffinity", Count: 1}, {Plugin: "TaintToleration", Count: 1}}},
		},
		{name: "in no namespace", q: store.ShadowQuery{Shadow: "binpack", Namespaces: []string{}}, want: v1alpha1.ShadowSummary{Shadow: "binpack"}},
		{name: "in another cluster", q: store.ShadowQuery{Shadow: "binpack", Cluster: "east"}, want: v1alpha1.ShadowSummary{Shadow: "binpack"}},
		{name: "the live profile is no shadow", q: store.ShadowQuery{Shadow: "default-scheduler"}, want: v1alpha1.ShadowSummary{Shadow: "default-scheduler"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ShadowSummary(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
	for _, tt := range []struct{ cluster, shadow, want string }{
		{"", "strict", "default-scheduler"},
		{"", "default-scheduler", ""},
		{"east", "binpack", ""},
	} {
		if live, err := s.ShadowOf(ctx, tt.cluster, tt.shadow); err != nil || live != tt.want {
			t.Errorf("ShadowOf(%q, %q) = %q, %v; want %q", tt.cluster, tt.shadow, live, err, tt.want)
		}
	}
}

// testShadowRunsGoWithTheirAttempts: retention and a deleted namespace
// remove the shadow runs of the attempts they remove, the repeats folded
// into them included, and no other.
func testShadowRunsGoWithTheirAttempts(t *testing.T, h Harness) {
	ctx := context.Background()
	summary := func(s store.Store) v1alpha1.ShadowSummary {
		t.Helper()
		got, err := s.ShadowSummary(ctx, store.ShadowQuery{Shadow: "binpack"})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Run("prune", func(t *testing.T) {
		s := h.open(t, store.Retention{MaxAge: 1500 * time.Millisecond})
		CheckShadows(t, s, "e1", 1)
		if _, err := s.Prune(ctx, recordtest.Base.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		want := v1alpha1.ShadowSummary{Shadow: "binpack", Compared: 2, OnlyShadowFits: 2, TopPlugins: []v1alpha1.PluginCount{{Plugin: "TaintToleration", Count: 2}}}
		if diff := cmp.Diff(want, summary(s)); diff != "" {
			t.Errorf("binpack's summary after a/p1 and b/p2 aged out (-want +got):\n%s", diff)
		}
	})
	t.Run("delete namespace", func(t *testing.T) {
		s := h.open(t, store.Retention{})
		CheckShadows(t, s, "e1", 1)
		if _, err := s.DeleteNamespace(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		want := v1alpha1.ShadowSummary{Shadow: "binpack", Compared: 1, OnlyLiveFits: 1, TopPlugins: []v1alpha1.PluginCount{{Plugin: "NodeAffinity", Count: 1}}}
		if diff := cmp.Diff(want, summary(s)); diff != "" {
			t.Errorf("binpack's summary after namespace a was deleted (-want +got):\n%s", diff)
		}
	})
}

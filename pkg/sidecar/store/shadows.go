package store

import (
	"cmp"
	"maps"
	"slices"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
)

// ShadowTally counts a shadow profile's runs into the summary of a
// ShadowQuery.
type ShadowTally struct {
	sum     v1alpha1.ShadowSummary
	reasons map[string]int64
	plugins map[string]int64
}

// NewShadowTally returns an empty tally for q.
func NewShadowTally(q ShadowQuery) *ShadowTally {
	return &ShadowTally{
		sum:     v1alpha1.ShadowSummary{Shadow: q.Shadow, Since: q.Since, Until: q.Until},
		reasons: map[string]int64{},
		plugins: map[string]int64{},
	}
}

// Add counts n runs of one outcome, not-compared reason and plugin (a
// ShadowRow's).
func (t *ShadowTally) Add(outcome record.ShadowOutcome, notComparedReason, plugin string, n int64) {
	s := &t.sum
	switch v1alpha1.ConvertShadowOutcome(outcome) {
	case v1alpha1.ShadowSameNode:
		s.SameNode += n
	case v1alpha1.ShadowOtherNode:
		s.OtherNode += n
	case v1alpha1.ShadowOnlyLiveFits:
		s.OnlyLiveFits += n
	case v1alpha1.ShadowOnlyShadowFits:
		s.OnlyShadowFits += n
	case v1alpha1.ShadowNeither:
		s.Neither += n
	default:
		s.NotCompared += n
		t.reasons[notComparedReason] += n
		return
	}
	s.Compared += n
	if plugin != "" {
		t.plugins[plugin] += n
	}
}

// Result returns the summary: reasons and plugins most frequent first,
// then by name.
func (t *ShadowTally) Result() v1alpha1.ShadowSummary {
	s := t.sum
	for _, r := range slices.Sorted(maps.Keys(t.reasons)) {
		s.NotComparedReasons = append(s.NotComparedReasons, v1alpha1.ReasonCount{Reason: r, Count: t.reasons[r]})
	}
	slices.SortStableFunc(s.NotComparedReasons, func(a, b v1alpha1.ReasonCount) int { return cmp.Compare(b.Count, a.Count) })
	for _, p := range slices.Sorted(maps.Keys(t.plugins)) {
		s.TopPlugins = append(s.TopPlugins, v1alpha1.PluginCount{Plugin: p, Count: t.plugins[p]})
	}
	slices.SortStableFunc(s.TopPlugins, func(a, b v1alpha1.PluginCount) int { return cmp.Compare(b.Count, a.Count) })
	return s
}

package record

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEncodeIsJSONMarshal(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	base := Attempt{
		Seq: 7, Pod: PodRef{Namespace: "ns", Name: "web-0", UID: "u1"}, Profile: "default-scheduler", Attempt: 2,
		Result: ResultScheduled, SelectedNode: "node-1",
		Timing:  Timing{Queued: start, Started: start.Add(time.Millisecond), Finished: start.Add(3 * time.Millisecond)},
		Filter:  []VerdictGroup{{Verdict: VerdictRejected, Plugin: "TaintToleration", Code: "UnschedulableAndUnresolvable", Reasons: []string{"untolerated taint"}, Count: 1, Nodes: []string{"node-3"}}},
		Plugins: []PluginRun{{Plugin: "NodeResourcesFit", Point: Filter, Duration: time.Microsecond, Calls: 3}},
	}
	scored := &Scores{
		Plugins: []ScorePlugin{{Name: "NodeResourcesFit", Weight: 1}, {Name: "ImageLocality", Weight: 2}},
		Nodes: []NodeScore{
			{Node: "node-1", Raw: []int64{90, 10}, Normalized: []int64{90, 10}, Weighted: []int64{90, 20}, Total: 110},
			{Node: "node-2", Raw: []int64{math.MinInt64, 0}, Normalized: []int64{0, math.MaxInt64}, Weighted: []int64{-1, 0}, Extenders: 5, Total: -4},
		},
	}
	tests := map[string]*Scores{
		"no scores":       nil,
		"skipped":         {SkippedReason: ScoringSkippedSingleNode},
		"scored":          scored,
		"no plugins":      {Nodes: []NodeScore{{Node: "node-1", Extenders: 3, Total: 3}}},
		"nil and empty":   {Plugins: []ScorePlugin{}, Nodes: []NodeScore{{Node: "n", Raw: []int64{}, Normalized: nil, Weighted: []int64{}}}},
		"skipped, scored": {SkippedReason: "why", Plugins: scored.Plugins, Nodes: scored.Nodes},
		"names to escape": {
			Plugins: []ScorePlugin{{Name: `a"b\c`, Weight: 1}, {Name: "<&>", Weight: 1}},
			Nodes: []NodeScore{
				{Node: "ünïcode", Raw: []int64{1, 2}, Normalized: []int64{1, 2}, Weighted: []int64{1, 2}},
				{Node: "tab\there\nnew\x00line\u2028", Raw: []int64{1, 2}, Normalized: []int64{1, 2}, Weighted: []int64{1, 2}},
				{Node: "bad utf-8 \xff\xfe", Raw: []int64{1, 2}, Normalized: []int64{1, 2}, Weighted: []int64{1, 2}},
				{Node: "", Raw: []int64{1, 2}, Normalized: []int64{1, 2}, Weighted: []int64{1, 2}},
			},
		},
	}
	for name, scores := range tests {
		t.Run(name, func(t *testing.T) {
			a := base
			a.Scores = scores
			want, err := json.Marshal(&a)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Encode(&a)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("Encode differs from json.Marshal (-json.Marshal +Encode):\n%s", diff)
			}
		})
	}
}

func TestEncodeKeepsJSONMarshalErrors(t *testing.T) {
	a := &Attempt{Timing: Timing{Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, Scores: &Scores{Nodes: []NodeScore{{Node: "n"}}}}
	if _, err := Encode(a); err == nil {
		t.Error("Encode accepted a time json.Marshal cannot encode (year 10000)")
	}
}

// BenchmarkEncode encodes the record of a 5000-node attempt under the
// default profile (500 nodes scored by 8 plugins), with Encode and with
// json.Marshal.
func BenchmarkEncode(b *testing.B) {
	a := &Attempt{Pod: PodRef{Namespace: "default", Name: "pod-0", UID: "u"}, Profile: "default-scheduler", Result: ResultScheduled, Scores: &Scores{}}
	for i := range 8 {
		a.Scores.Plugins = append(a.Scores.Plugins, ScorePlugin{Name: fmt.Sprintf("Plugin%d", i), Weight: 1})
	}
	for n := range 500 {
		s := NodeScore{Node: fmt.Sprintf("node-%d-abcde", n), Total: int64(n)}
		for i := range a.Scores.Plugins {
			v := int64((n + i) % 101)
			s.Raw, s.Normalized, s.Weighted = append(s.Raw, v), append(s.Normalized, v), append(s.Weighted, v)
		}
		a.Scores.Nodes = append(a.Scores.Nodes, s)
	}
	for name, encode := range map[string]func(*Attempt) ([]byte, error){
		"Encode":       Encode,
		"json.Marshal": func(a *Attempt) ([]byte, error) { return json.Marshal(a) },
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encode(a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

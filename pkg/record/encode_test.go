package record

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// testScores returns the scores of a 5000-node attempt under the default
// profile: nodes scored by 8 plugins, every other one normalizing (its raw
// scores differ from its normalized ones).
func testScores(nodes int) *Scores {
	s := &Scores{}
	for i := range 8 {
		s.Plugins = append(s.Plugins, ScorePlugin{Name: fmt.Sprintf("Plugin%d", i), Weight: int64(1 + i%3)})
	}
	for n := range nodes {
		node := NodeScore{Node: fmt.Sprintf("node-%d-abcde", n)}
		for i, p := range s.Plugins {
			v := int64((n + i) % 101)
			raw := v
			if i%2 == 1 {
				raw = int64(n % 7)
			}
			node.Raw, node.Normalized, node.Weighted = append(node.Raw, raw), append(node.Normalized, v), append(node.Weighted, v*p.Weight)
			node.Total += v * p.Weight
		}
		s.Nodes = append(s.Nodes, node)
	}
	return s
}

func TestEncodeRoundTrips(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	base := Attempt{
		Pod: PodRef{Namespace: "ns", Name: "web-0", UID: "u1"}, Profile: "default-scheduler", Attempt: 2,
		Result: ResultScheduled, SelectedNode: "node-1",
		Timing:  Timing{Queued: start, Started: start.Add(time.Millisecond), Finished: start.Add(3 * time.Millisecond)},
		Filter:  []VerdictGroup{{Verdict: VerdictRejected, Plugin: "TaintToleration", Code: "UnschedulableAndUnresolvable", Reasons: []string{"untolerated taint"}, Count: 1, Nodes: []string{"node-3"}}},
		Plugins: []PluginRun{{Plugin: "NodeResourcesFit", Point: Filter, Duration: time.Microsecond, Calls: 3}},
	}
	scored := &Scores{
		Plugins: []ScorePlugin{{Name: "NodeResourcesFit", Weight: 1}, {Name: "ImageLocality", Weight: 2}},
		Nodes: []NodeScore{
			{Node: "node-1", Raw: []int64{90, 10}, Normalized: []int64{90, 10}, Weighted: []int64{90, 20}, Total: 110},
			{Node: "node-2", Raw: []int64{math.MinInt64, 0}, Normalized: []int64{0, math.MaxInt64 / 2}, Weighted: []int64{0, math.MaxInt64 - 1}, Extenders: 5, Total: -4},
		},
	}
	two := func(name string) NodeScore {
		return NodeScore{Node: name, Raw: []int64{1, 2}, Normalized: []int64{1, 2}, Weighted: []int64{1, 2}}
	}
	tests := map[string]*Scores{
		"no scores":       nil,
		"skipped":         {SkippedReason: ScoringSkippedSingleNode},
		"scored":          scored,
		"default profile": testScores(50),
		"no plugins":      {Nodes: []NodeScore{{Node: "node-1", Extenders: 3, Total: 3}}},
		"skipped, scored": {SkippedReason: "why", Plugins: scored.Plugins, Nodes: scored.Nodes},
		"names to escape": {
			Plugins: []ScorePlugin{{Name: `a"b\c`, Weight: 1}, {Name: "<&>", Weight: 1}},
			Nodes:   []NodeScore{two("ünïcode"), two("tab\there\nnew\x00line\u2028"), two("bad utf-8 \xff\xfe"), two("")},
		},
	}
	for name, scores := range tests {
		t.Run(name, func(t *testing.T) {
			a := base
			a.Scores = scores
			data, err := Encode(&a)
			if err != nil {
				t.Fatal(err)
			}
			var got Attempt
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("decoding %s: %v", data, err)
			}
			// encoding/json replaces invalid UTF-8, in either form.
			marshaled, err := json.Marshal(&a)
			if err != nil {
				t.Fatal(err)
			}
			var want Attempt
			if err := json.Unmarshal(marshaled, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Encode and decode changed the record (-json.Marshal +Encode):\n%s", diff)
			}
		})
	}
}

// TestEncodeRoundTripsShadows encodes a record with a shadow run, the
// shadow's own record with its verdicts and scores among it, and decodes
// it unchanged.
func TestEncodeRoundTripsShadows(t *testing.T) {
	rank, liveScore, shadowScore := 2, int64(180), int64(150)
	a := Attempt{
		Pod: PodRef{Namespace: "ns", Name: "web-0", UID: "u1"}, Profile: "default-scheduler", Attempt: 1,
		Result: ResultScheduled, SelectedNode: "node-1",
		Shadows: []ShadowRun{
			{
				Profile: "binpack", Outcome: ShadowOtherNode, LiveNodeRank: rank, LiveNodeScore: &liveScore, ShadowNodeLiveScore: &shadowScore,
				Attempt: &Attempt{
					Pod: PodRef{Namespace: "ns", Name: "web-0", UID: "u1"}, Profile: "binpack", Attempt: 1, Result: ResultScheduled, SelectedNode: "node-2",
					Filter: []VerdictGroup{{Verdict: VerdictPassed, Count: 2, Nodes: []string{"node-1", "node-2"}}},
					Scores: testScores(2),
				},
			},
			{
				Profile: "strict", Outcome: ShadowLiveOnly,
				PostFilter: []ShadowPostFilter{{
					Plugin: "DefaultPreemption", DryRun: true, Code: CodeSuccess, NominatedNode: "node-3",
					Victims: []PodRef{{Namespace: "ns", Name: "batch-1", UID: "u2"}},
				}},
			},
		},
	}
	data, err := Encode(&a)
	if err != nil {
		t.Fatal(err)
	}
	var got Attempt
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	if diff := cmp.Diff(a, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Encode and decode changed the record (-want +got):\n%s", diff)
	}
}

// TestEncodeWritesJSONMarshalBytes checks that everything but the score
// columns, the Filter groups and details among it, is json.Marshal's
// bytes, escapes included.
func TestEncodeWritesJSONMarshalBytes(t *testing.T) {
	start := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	base := Attempt{
		Pod: PodRef{Namespace: "ns", Name: "web-0", UID: "u1"}, Profile: "default-scheduler", Attempt: 1,
		Result: ResultUnschedulable, Message: "0/4 nodes are available", FailedPoint: Filter,
		Timing: Timing{Queued: start, Started: start.Add(time.Millisecond), Finished: start.Add(2 * time.Millisecond)},
		Nodes:  NodeCounts{Total: 6, Evaluated: 4},
	}
	filter := []VerdictGroup{
		{Verdict: VerdictPassed, Count: 1, Nodes: []string{"node-1"}},
		{Verdict: VerdictRejected, Plugin: "TaintToleration", Code: CodeUnschedulableAndUnresolvable, Reasons: []string{"node(s) had untolerated taint(s) <&>", `"quoted"`}, Count: 2, Nodes: []string{"node-2", "ünïcode\t\x00"}},
		{Verdict: VerdictRejected, Plugin: "NodePorts", Code: CodeUnschedulable, Reasons: []string{}, Count: 1, Nodes: []string{"tab\there\u2028 bad \xff"}},
		{Verdict: VerdictNotEvaluated, NotEvaluatedReason: NotEvaluatedEnoughFeasible, Count: 2, Nodes: []string{}},
	}
	tests := map[string]func(a *Attempt){
		"bare":            func(*Attempt) {},
		"filter":          func(a *Attempt) { a.Filter = filter },
		"skipped scoring": func(a *Attempt) { a.Filter, a.Scores = filter, &Scores{SkippedReason: ScoringSkippedSingleNode} },
		"details": func(a *Attempt) {
			a.Filter, a.Details, a.DetailsCut = filter[1:2], []PluginDetail{{Plugin: "P", Node: "node-2", Detail: "<why>"}}, 3
		},
		"empty lists": func(a *Attempt) { a.Filter, a.Details, a.Scores = []VerdictGroup{}, []PluginDetail{}, &Scores{} },
	}
	for name, set := range tests {
		t.Run(name, func(t *testing.T) {
			a := base
			set(&a)
			got, err := Encode(&a)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(&a)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("Encode wrote\n%s\njson.Marshal\n%s", got, want)
			}
		})
	}
}

func TestEncodeWritesColumns(t *testing.T) {
	a := &Attempt{Scores: &Scores{
		Plugins: []ScorePlugin{{Name: "NodeResourcesFit", Weight: 1}, {Name: "TaintToleration", Weight: 3}},
		Nodes: []NodeScore{
			{Node: "a", Raw: []int64{80, 0}, Normalized: []int64{80, 100}, Weighted: []int64{80, 300}, Total: 380},
			{Node: "b", Raw: []int64{40, 1}, Normalized: []int64{40, 0}, Weighted: []int64{40, 0}, Extenders: 2, Total: 42},
		},
	}}
	data, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Scores json.RawMessage `json:"scores"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"plugins":[{"name":"NodeResourcesFit","weight":1},{"name":"TaintToleration","weight":3}],` +
		`"nodeNames":["a","b"],"totals":[380,42],"normalized":[[80,40],[100,0]],"raw":[null,[0,1]],"extenders":[0,2]}`
	if string(got.Scores) != want {
		t.Errorf("scores encoded as\n%s\nwant\n%s", got.Scores, want)
	}
	if full, _ := json.Marshal(a.Scores); len(got.Scores) >= len(full) {
		t.Errorf("columns take %d bytes, json.Marshal %d: want fewer", len(got.Scores), len(full))
	}
}

func TestScoresUnmarshalRejectsInconsistentColumns(t *testing.T) {
	const plugins = `"plugins":[{"name":"A","weight":1}]`
	tests := map[string]struct{ json, wantErr string }{
		"totals short":      {`{` + plugins + `,"nodeNames":["a","b"],"totals":[1],"normalized":[[1,2]],"raw":[null]}`, "totals has 1 values for 2 nodeNames"},
		"normalized lists":  {`{` + plugins + `,"nodeNames":["a"],"totals":[1],"normalized":[],"raw":[null]}`, "normalized has 0 lists for 1 plugins"},
		"normalized values": {`{` + plugins + `,"nodeNames":["a"],"totals":[1],"normalized":[[1,2]],"raw":[null]}`, "normalized[0] has 2 values for 1 nodeNames"},
		"raw lists":         {`{` + plugins + `,"nodeNames":["a"],"totals":[1],"normalized":[[1]]}`, "raw has 0 lists for 1 plugins"},
		"raw values":        {`{` + plugins + `,"nodeNames":["a"],"totals":[1],"normalized":[[1]],"raw":[[]]}`, "raw[0] has 0 values for 1 nodeNames"},
		"extenders":         {`{` + plugins + `,"nodeNames":["a"],"totals":[1],"normalized":[[1]],"raw":[null],"extenders":[1,2]}`, "extenders has 2 values for 1 nodeNames"},
		"both forms":        {`{` + plugins + `,"nodes":[{"node":"a"}],"nodeNames":["a"],"totals":[1],"normalized":[[1]],"raw":[null]}`, "both nodes and nodeNames"},
		"columns alone":     {`{` + plugins + `,"totals":[1]}`, "need nodeNames"},
		"not a number":      {`{` + plugins + `,"nodeNames":["a"],"totals":["x"]}`, "cannot unmarshal string"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var s Scores
			err := json.Unmarshal([]byte(tc.json), &s)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
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
// json.Marshal, and decodes Encode's JSON, as the sidecar does.
func BenchmarkEncode(b *testing.B) {
	a := &Attempt{Pod: PodRef{Namespace: "default", Name: "pod-0", UID: "u"}, Profile: "default-scheduler", Result: ResultScheduled, Scores: testScores(500)}
	for name, encode := range map[string]func(*Attempt) ([]byte, error){
		"Encode":       Encode,
		"json.Marshal": func(a *Attempt) ([]byte, error) { return json.Marshal(a) },
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				data, err := encode(a)
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.ReportMetric(float64(size), "bytes/record")
		})
	}
	b.Run("decode", func(b *testing.B) {
		data, err := Encode(a)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			var got Attempt
			if err := json.Unmarshal(data, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}

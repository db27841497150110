//go:build !kube1.35 && !kube1.36

package observe

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
)

// TestPublishedRecordsKeepTheirOwnValues: attempts published one after
// the other, the later with fewer nodes and no raw scores, each reach the
// sink with their own verdicts and scores although their records share
// arrays: the later record has no value of the earlier.
func TestPublishedRecordsKeepTheirOwnValues(t *testing.T) {
	sink := &encodingSink{}
	r := NewRecorder(Options{Sink: sink})
	r.profileTable("p").scorePlugins = []record.ScorePlugin{{Name: "A", Weight: 2}}
	var want []record.Attempt
	for i, names := range [][]string{{"a", "b", "c"}, {"d"}} {
		var infos []fwk.NodeInfo
		for _, name := range names {
			n := framework.NewNodeInfo()
			n.SetNode(st.MakeNode().Name(name).Obj())
			infos = append(infos, n)
		}
		a := newAttempt(r.profileTable("p"), &v1.Pod{}, i+1, time.Unix(0, 0), time.Unix(1, 0), r.nodeSetOf(infos))
		for k, name := range names {
			a.addVerdict(name, nil)
			v := int64(10*(i+1) + k)
			ns := fwk.NodePluginScores{Name: name, Scores: []fwk.PluginScore{{Name: "A", Score: 2 * v}}, TotalScore: 2 * v}
			if i == 0 {
				ns.RawScores = []fwk.PluginScore{{Name: "A", Score: v + 1}}
			}
			a.scores = append(a.scores, ns)
		}
		a.scored, a.feasible, a.result = true, len(names), record.ResultScheduled
		want = append(want, record.Attempt{Filter: []record.VerdictGroup{{Verdict: record.VerdictPassed, Count: len(names), Nodes: slices.Clone(names)}}})
		r.publish(a)
	}
	for i, data := range sink.encoded {
		var got record.Attempt
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i].Filter, got.Filter); diff != "" {
			t.Errorf("record %d: Filter groups (-want +got):\n%s", i, diff)
		}
		var normalized, raw []int64
		for _, n := range got.Scores.Nodes {
			normalized, raw = append(normalized, n.Normalized...), append(raw, n.Raw...)
		}
		wantNormalized, wantRaw := [][]int64{{12, 11, 10}, {20}}[i], [][]int64{{13, 12, 11}, {0}}[i]
		if !slices.Equal(normalized, wantNormalized) || !slices.Equal(raw, wantRaw) {
			t.Errorf("record %d: normalized scores %v, raw %v; want %v and %v", i, normalized, raw, wantNormalized, wantRaw)
		}
	}
}

package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
)

// TestRecordBoundsPluginText records what two hostile pods make plugins
// say: an error quoting a 20 KB unicode value of a preferred node affinity
// term, and a thousand "Insufficient" reasons per node. Every message and
// reason of the record is cut to record.MaxTextBytes bytes, every reasons
// list to record.MaxReasons entries, so the record stays small; the
// statuses the scheduler sees are not changed.
func TestRecordBoundsPluginText(t *testing.T) {
	r := NewRecorder(Options{Sink: discard{}})
	table := r.profileTable("p")
	fit, affinity, preemption := table.add("NodeResourcesFit"), table.add("NodeAffinity"), table.add("DefaultPreemption")
	var infos []fwk.NodeInfo
	for _, name := range []string{"node-a", "node-b", "node-c"} {
		n := framework.NewNodeInfo()
		n.SetNode(st.MakeNode().Name(name).Obj())
		infos = append(infos, n)
	}
	a := newAttempt(table, &v1.Pod{}, 1, time.Unix(0, 0), time.Unix(1, 0), r.nodeSetOf(infos))

	quoted := "[0].matchExpressions[0].values[0]: " + strings.Repeat("🚀", 5000)
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("Insufficient hostile.example.com/r%04d-%s", i, strings.Repeat("x", 57))
	}
	preScore := fwk.AsStatus(errors.New(quoted)).WithPlugin("NodeAffinity")
	insufficient := fwk.NewStatus(fwk.Unschedulable, many...).WithPlugin("NodeResourcesFit")
	notHelpful := fwk.NewStatus(fwk.Unschedulable, "0/3 nodes are available: 3 "+strings.Join(many, ", 3 ")+".").WithPlugin("DefaultPreemption")
	wantInsufficient, wantPreScore := slices.Clone(insufficient.Reasons()), slices.Clone(preScore.Reasons())

	a.addPreFilter(fit, nil, fwk.NewStatus(fwk.Success, many...))
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		a.addVerdict(n, insufficient)
	}
	a.addPoint(pointPostFilter, time.Unix(1, 0), notHelpful)
	a.addPluginTime(preemption, pointPostFilter, time.Millisecond)
	a.addPluginStatus(preemption, pointPostFilter, notHelpful, 0)
	a.addPoint(pointPreScore, time.Unix(1, 0), preScore)
	a.addPluginTime(affinity, pointPreScore, time.Millisecond)
	a.addPluginStatus(affinity, pointPreScore, preScore, 0)
	a.message = preScore.Message()
	a.result = record.ResultError
	rec := a.build()

	wantReasons := append(slices.Clone(many[:record.MaxReasons-1]), "… and 985 more reasons")
	want := []record.VerdictGroup{{Verdict: record.VerdictRejected, Plugin: "NodeResourcesFit", Code: "Unschedulable", Reasons: wantReasons, Count: 3, Nodes: []string{"node-a", "node-b", "node-c"}}}
	if diff := cmp.Diff(want, rec.Filter); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	cutQuote := record.CutText(quoted, record.MaxTextBytes)
	if rec.Message != cutQuote || !strings.HasSuffix(rec.Message, fmt.Sprintf("(%d bytes cut)", len(quoted)-strings.Index(cutQuote, "…"))) {
		t.Errorf("message %q, want the error cut to %d bytes with a marker", rec.Message[max(0, len(rec.Message)-40):], record.MaxTextBytes)
	}

	var lists [][]string
	texts := []string{rec.Message}
	for _, p := range rec.Points {
		lists = append(lists, p.Reasons)
	}
	for _, p := range rec.Plugins {
		lists = append(lists, p.Reasons)
	}
	for _, p := range rec.PreFilter {
		lists = append(lists, p.Reasons)
	}
	for _, g := range rec.Filter {
		lists = append(lists, g.Reasons)
	}
	for _, l := range lists {
		if len(l) > record.MaxReasons {
			t.Errorf("a reasons list has %d entries, more than %d", len(l), record.MaxReasons)
		}
		texts = append(texts, l...)
	}
	for _, s := range texts {
		if len(s) > record.MaxTextBytes || !utf8.ValidString(s) {
			t.Errorf("a text of the record is %d bytes (valid UTF-8 %v), more than %d", len(s), utf8.ValidString(s), record.MaxTextBytes)
		}
	}
	// Two cut messages and reasons (Message, PreScore's point and plugin),
	// two cut PostFilter reasons, three lists of 16 short reasons, names
	// and timings.
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	const bound = 12 << 10
	if len(data) > bound {
		t.Errorf("record is %d bytes, more than %d", len(data), bound)
	}
	t.Logf("record of %d bytes for %d bytes of plugin text", len(data), 3*len(strings.Join(many, ""))+len(notHelpful.Message())+len(quoted))

	// What the scheduler sees is not cut.
	if diff := cmp.Diff(wantInsufficient, insufficient.Reasons()); diff != "" {
		t.Errorf("Filter status changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPreScore, preScore.Reasons()); diff != "" || preScore.AsError().Error() != quoted {
		t.Errorf("PreScore status changed (-want +got):\n%s", diff)
	}
}

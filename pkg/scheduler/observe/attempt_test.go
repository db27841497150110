package observe

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/build"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/nodeset"
)

// TestAddVerdict: a node's Filter verdict goes to its slot, found by the
// snapshot's own name string or an equal copy; success is build.Passed, a
// later verdict replaces the earlier, and a node not in the snapshot has
// none.
func TestAddVerdict(t *testing.T) {
	r := NewRecorder(Options{Sink: discard{}})
	var infos []fwk.NodeInfo
	for _, name := range []string{"b", "a", "c"} {
		n := framework.NewNodeInfo()
		n.SetNode(st.MakeNode().Name(name).Obj())
		infos = append(infos, n)
	}
	a := newAttempt(r.profileTable("p"), &v1.Pod{}, 1, time.Unix(0, 0), time.Unix(1, 0), r.nodeSetOf(infos))
	reject := fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit")
	a.addVerdict("b", reject)
	a.addVerdict(strings.Clone("a"), reject)
	a.addVerdict("a", fwk.NewStatus(fwk.Success))
	a.addVerdict("d", reject)
	want := []*fwk.Status{reject, build.Passed, nil}
	for i, s := range a.verdicts {
		if s != want[i] {
			t.Errorf("verdict of %s is %v, want %v", infos[i].Node().Name, s, want[i])
		}
	}
}

// TestPluginRunsPointByPoint: the plugins' clocks are read point by point,
// in the order the framework runs the points, each plugin that was called
// with its calls, timed calls and their time; a plugin not called at a
// point has no run there.
func TestPluginRunsPointByPoint(t *testing.T) {
	r := NewRecorder(Options{Sink: discard{}})
	table := r.profileTable("p")
	x, y := table.add("X"), table.add("Y")
	a := newAttempt(table, &v1.Pod{}, 1, time.Unix(0, 0), time.Unix(1, 0), nodeset.Empty)
	a.addPluginTime(y, pointBind, 3*time.Millisecond)
	a.addPluginTime(x, pointPreFilter, time.Millisecond)
	a.addPluginTime(y, pointPreFilter, 2*time.Millisecond)
	a.addPluginTime(y, pointPreFilter, 4*time.Millisecond)
	want := []record.PluginRun{
		{Plugin: "X", Point: record.PreFilter, Duration: time.Millisecond, Calls: 1, Timed: 1},
		{Plugin: "Y", Point: record.PreFilter, Duration: 6 * time.Millisecond, Calls: 2, Timed: 2},
		{Plugin: "Y", Point: record.Bind, Duration: 3 * time.Millisecond, Calls: 1, Timed: 1},
	}
	if diff := cmp.Diff(want, a.pluginRuns()); diff != "" {
		t.Errorf("plugin runs (-want +got):\n%s", diff)
	}
}

// TestKeepRawScoresKeepsACopy: the raw scores kept for a plugin are those
// its normalizer was given, although the normalizer changes them in place.
func TestKeepRawScoresKeepsACopy(t *testing.T) {
	r := NewRecorder(Options{Sink: discard{}})
	a := newAttempt(r.profileTable("p"), &v1.Pod{}, 1, time.Unix(0, 0), time.Unix(1, 0), nodeset.Empty)
	b := fwk.NodeScoreList{{Name: "n1", Score: 3}, {Name: "n2", Score: 9}}
	a.keepRawScores("B", b)
	b[0].Score, b[1].Score = 20, 100
	want := map[string]fwk.NodeScoreList{"B": {{Name: "n1", Score: 3}, {Name: "n2", Score: 9}}}
	if diff := cmp.Diff(want, a.rawScores); diff != "" {
		t.Errorf("kept raw scores (-want +got):\n%s", diff)
	}
}

package observe

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/nodeset"
)

// shapeBase is what every part of a test plugin shares: its name, how it
// answers, and the log of its calls.
type shapeBase struct {
	name string
	// varied switches every answer that has two forms: Skip or Success,
	// extensions or none, a rejection or none.
	varied bool

	mu    sync.Mutex
	calls []string
}

func (b *shapeBase) Name() string { return b.name }

func (b *shapeBase) called(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, fmt.Sprintf(format, args...))
}

// status is the part's answer at point: Skip, Unschedulable or Success.
func (b *shapeBase) status(point string, alternative fwk.Code) *fwk.Status {
	if b.varied {
		return fwk.NewStatus(alternative, b.name+" at "+point)
	}
	return nil
}

type preEnqueuePart struct{ b *shapeBase }

func (p preEnqueuePart) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	p.b.called("PreEnqueue %s", pod.Name)
	return p.b.status("PreEnqueue", fwk.UnschedulableAndUnresolvable)
}

type queueSortPart struct{ b *shapeBase }

type enqueueExtensionsPart struct{ b *shapeBase }

func (p enqueueExtensionsPart) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}}}, nil
}

type preFilterPart struct{ b *shapeBase }

func (p preFilterPart) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.b.called("PreFilter %s %d", pod.Name, len(nodes))
	if p.b.varied {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreFilterResult{NodeNames: sets.New("a", "b")}, nil
}

func (p preFilterPart) PreFilterExtensions() fwk.PreFilterExtensions {
	if p.b.varied {
		return nil
	}
	return p
}

func (p preFilterPart) AddPod(_ context.Context, _ fwk.CycleState, pod *v1.Pod, add fwk.PodInfo, node fwk.NodeInfo) *fwk.Status {
	p.b.called("AddPod %s %s %s", pod.Name, add.GetPod().Name, node.Node().Name)
	return nil
}

func (p preFilterPart) RemovePod(_ context.Context, _ fwk.CycleState, pod *v1.Pod, remove fwk.PodInfo, node fwk.NodeInfo) *fwk.Status {
	p.b.called("RemovePod %s %s %s", pod.Name, remove.GetPod().Name, node.Node().Name)
	return fwk.NewStatus(fwk.Error, "cannot remove")
}

type filterPart struct{ b *shapeBase }

func (p filterPart) Filter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node fwk.NodeInfo) *fwk.Status {
	p.b.called("Filter %s %s", pod.Name, node.Node().Name)
	if node.Node().Name == "b" {
		return p.b.status("Filter", fwk.Unschedulable)
	}
	return nil
}

// ExplainFilter makes every shape with Filter a FilterExplainer.
func (p filterPart) ExplainFilter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, node fwk.NodeInfo, s *fwk.Status) string {
	return fmt.Sprintf("%s rejected %s: %s", p.b.name, node.Node().Name, s.Message())
}

type postFilterPart struct{ b *shapeBase }

func (p postFilterPart) PostFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	p.b.called("PostFilter %s %v", pod.Name, m.Get("b").Code())
	if p.b.varied {
		return nil, fwk.NewStatus(fwk.Unschedulable, "no victims")
	}
	return framework.NewPostFilterResultWithNominatedNode("a"), fwk.NewStatus(fwk.Success)
}

type preScorePart struct{ b *shapeBase }

func (p preScorePart) PreScore(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	p.b.called("PreScore %s %d", pod.Name, len(nodes))
	return p.b.status("PreScore", fwk.Skip)
}

type scorePart struct{ b *shapeBase }

func (p scorePart) Score(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node fwk.NodeInfo) (int64, *fwk.Status) {
	p.b.called("Score %s %s", pod.Name, node.Node().Name)
	return int64(len(node.Node().Name) * 10), nil
}

func (p scorePart) ScoreExtensions() fwk.ScoreExtensions {
	if p.b.varied {
		return nil
	}
	return p
}

func (p scorePart) NormalizeScore(_ context.Context, _ fwk.CycleState, pod *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	p.b.called("NormalizeScore %s %v", pod.Name, scores)
	for i := range scores {
		scores[i].Score += int64(i)
	}
	return nil
}

type reservePart struct{ b *shapeBase }

func (p reservePart) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	p.b.called("Reserve %s %s", pod.Name, node)
	return p.b.status("Reserve", fwk.Unschedulable)
}

func (p reservePart) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) {
	p.b.called("Unreserve %s %s", pod.Name, node)
}

type permitPart struct{ b *shapeBase }

func (p permitPart) Permit(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) (*fwk.Status, time.Duration) {
	p.b.called("Permit %s %s", pod.Name, node)
	return p.b.status("Permit", fwk.Unschedulable), 0
}

type preBindPart struct{ b *shapeBase }

func (p preBindPart) PreBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	p.b.called("PreBind %s %s", pod.Name, node)
	return nil
}

type bindPart struct{ b *shapeBase }

func (p bindPart) Bind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	p.b.called("Bind %s %s", pod.Name, node)
	return p.b.status("Bind", fwk.Skip)
}

type postBindPart struct{ b *shapeBase }

func (p postBindPart) PostBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) {
	p.b.called("PostBind %s %s", pod.Name, node)
}

type signPart struct{ b *shapeBase }

func (p signPart) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if p.b.varied {
		return nil, fwk.NewStatus(fwk.Unschedulable, "unsignable")
	}
	return []fwk.SignFragment{{Key: p.b.name, Value: pod.Spec.Priority}}, nil
}

// testBinder binds every pod, so that a profile whose shape has no Bind
// still has a bind plugin.
type testBinder struct{}

func (testBinder) Name() string { return "TestBinder" }
func (testBinder) Bind(context.Context, fwk.CycleState, *v1.Pod, string) *fwk.Status {
	return nil
}

// onceObservedPoints maps the parts whose extension point the wrappers
// record once per attempt to that point.
var onceObservedPoints = map[string]point{
	"preFilter": pointPreFilter, "preScore": pointPreScore, "reserve": pointReserve,
	"permit": pointPermit, "preBind": pointPreBind, "postBind": pointPostBind,
}

// TestObservedFrameworkEqualsPlain builds, for every plugin shape (see
// hack/shapegen) in both of its answer sets, one framework plainly and one
// observed, with the shape enabled through multiPoint with a weight beside
// a queue sort and a bind plugin. Then it runs every extension point of both
// and compares what the framework answers and what the plugin was asked,
// call by call: enabled plugins, queueing hints, signatures, PreFilter
// results and Skip, PreFilterExtensions, Filter verdicts, PostFilter,
// scores with and without ScoreExtensions, Reserve, Permit, PreBind,
// Bind and PostBind. It also checks that the observed framework recorded
// the shape's calls.
func TestObservedFrameworkEqualsPlain(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.OpportunisticBatching, true)
	for i, shape := range shapes {
		for _, varied := range []bool{false, true} {
			name := fmt.Sprintf("%03d-%v-%s", i, varied, shape.parts)
			plainBase := &shapeBase{name: "Shape", varied: varied}
			plain, err := shapeFramework(t, shape.build(plainBase), shape.parts)
			if err != nil {
				t.Fatalf("%s: plain framework: %v", name, err)
			}
			observedBase := &shapeBase{name: "Shape", varied: varied}
			f, err := shapeFramework(t, shape.build(observedBase), shape.parts)
			if err != nil {
				t.Fatalf("%s: framework: %v", name, err)
			}
			r := NewRecorder(Options{Sink: discard{}})
			table := r.profileTable("shapes")
			if err := r.observePlugins(table, f); err != nil {
				t.Fatalf("%s: %v", name, err)
			}

			want := exercise(t, plain, nil)
			a := newAttempt(table, st.MakePod().Name("p").Obj(), 1, time.Now(), time.Now(), nodeset.Empty)
			got := exercise(t, f, a)
			// Filter and Score run in parallel over nodes: compare the
			// calls as sets, their order being the framework's answers'.
			want = append(want, sorted(plainBase.calls)...)
			got = append(got, sorted(observedBase.calls)...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s: the observed framework differs from the plain one (-plain +observed):\n%s", name, diff)
			}

			observedPoints := map[string]bool{}
			for _, s := range a.pluginStatuses {
				if s.Plugin == "Shape" {
					observedPoints[s.Point] = true
				}
			}
			wantDetails := []record.PluginDetail(nil)
			// Varied, Filter rejects node b, unless PreFilter skipped it.
			if varied && slices.Contains(shape.parts, "filter") && !slices.Contains(shape.parts, "preFilter") {
				wantDetails = []record.PluginDetail{{Plugin: "Shape", Node: "b", Detail: "Shape rejected b: Shape at Filter"}}
			}
			if diff := cmp.Diff(wantDetails, a.details); diff != "" {
				t.Errorf("%s: details (-want +got):\n%s", name, diff)
			}
			for _, part := range shape.parts {
				if p, ok := onceObservedPoints[part]; ok && !observedPoints[p.String()] && !(p == pointPreFilter && len(a.preFilter) > 0) && ranAt(observedBase.calls, p) {
					t.Errorf("%s: the shape's %s call was not recorded", name, p)
				}
			}
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// ranAt tells whether calls include a call at point p.
func ranAt(calls []string, p point) bool {
	return slices.ContainsFunc(calls, func(c string) bool { return len(c) > len(p.String()) && c[:len(p.String())+1] == p.String()+" " })
}

// shapeFramework builds a framework whose profile enables plugin through
// multiPoint with weight 3, PrioritySort unless the plugin sorts the queue,
// and TestBinder.
func shapeFramework(t *testing.T, plugin fwk.Plugin, parts []string) (framework.Framework, error) {
	registry := frameworkruntime.Registry{
		"Shape":        func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return plugin, nil },
		"TestBinder":   func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return testBinder{}, nil },
		queuesort.Name: queuesort.New,
	}
	profile := config.KubeSchedulerProfile{
		SchedulerName: "shapes",
		Plugins: &config.Plugins{
			MultiPoint: config.PluginSet{Enabled: []config.Plugin{{Name: "Shape", Weight: 3}}},
			Bind:       config.PluginSet{Enabled: []config.Plugin{{Name: "TestBinder"}}},
		},
	}
	if !slices.Contains(parts, "queueSort") {
		profile.Plugins.QueueSort.Enabled = []config.Plugin{{Name: queuesort.Name}}
	}
	f, err := newFramework(t, registry, profile)
	if err != nil {
		return nil, err
	}
	return f.(framework.Framework), nil
}

// exercise runs every extension point of f once, as a scheduling and a
// binding cycle would, and returns what f answered. When a is set, it is
// the attempt the cycle records into.
func exercise(t *testing.T, f framework.Framework, a *attempt) []string {
	t.Helper()
	ctx := context.Background()
	pod := st.MakePod().Name("p").UID("p").Priority(5).Obj()
	nodes := []fwk.NodeInfo{nodeInfo("a"), nodeInfo("b"), nodeInfo("c")}
	state := framework.NewCycleState()
	if a != nil {
		state.Write(stateKey, a)
		a.table.current.Store(a)
		defer a.table.current.Store(nil)
	}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	say("plugins %v", f.ListPlugins())
	for _, p := range f.PreEnqueuePlugins() {
		say("PreEnqueue %s %v", p.Name(), p.PreEnqueue(ctx, pod))
	}
	x := &framework.QueuedPodInfo{PodInfo: mustPodInfo(t, pod)}
	y := &framework.QueuedPodInfo{PodInfo: mustPodInfo(t, st.MakePod().Name("q").Priority(9).Obj())}
	say("Less %v", f.QueueSortFunc()(x, y))
	for _, e := range f.EnqueueExtensions() {
		events, err := e.EventsToRegister(ctx)
		say("EnqueueExtensions %s %d %v", e.Name(), len(events), err)
	}
	say("SignPod %v", signPod(ctx, f, pod))

	result, s, unresolved := f.RunPreFilterPlugins(ctx, state, pod)
	say("RunPreFilterPlugins %v %v %v", result, s, sets.List(unresolved))
	victim := mustPodInfo(t, st.MakePod().Name("v").Obj())
	say("RunPreFilterExtensionAddPod %v", f.RunPreFilterExtensionAddPod(ctx, state, pod, victim, nodes[0]))
	say("RunPreFilterExtensionRemovePod %v", f.RunPreFilterExtensionRemovePod(ctx, state, pod, victim, nodes[0]))
	statuses := framework.NewDefaultNodeToStatus()
	for _, n := range nodes {
		s := f.RunFilterPlugins(ctx, state, pod, n)
		say("RunFilterPlugins %s %v", n.Node().Name, s)
		if !s.IsSuccess() {
			statuses.Set(n.Node().Name, s)
		}
	}
	postFilter, s := f.RunPostFilterPlugins(ctx, state, pod, statuses)
	if postFilter != nil && postFilter.NominatingInfo != nil {
		say("RunPostFilterPlugins nominated %q %v", postFilter.NominatedNodeName, s)
	} else {
		say("RunPostFilterPlugins %v %v", postFilter, s)
	}
	say("RunPreScorePlugins %v", f.RunPreScorePlugins(ctx, state, pod, nodes))
	scores, s := f.RunScorePlugins(ctx, state, pod, nodes)
	say("RunScorePlugins %v %v", scores, s)
	say("RunReservePluginsReserve %v", f.RunReservePluginsReserve(ctx, state, pod, "a"))
	f.RunReservePluginsUnreserve(ctx, state, pod, "a")
	say("RunPermitPlugins %s", runPermit(ctx, f, state, pod, "a"))
	say("RunPreBindPreFlights %v", f.RunPreBindPreFlights(ctx, state, pod, "a"))
	say("RunPreBindPlugins %v", f.RunPreBindPlugins(ctx, state, pod, "a"))
	say("RunBindPlugins %v", f.RunBindPlugins(ctx, state, pod, "a"))
	f.RunPostBindPlugins(ctx, state, pod, "a")
	return out
}

func nodeInfo(name string) fwk.NodeInfo {
	n := framework.NewNodeInfo()
	n.SetNode(st.MakeNode().Name(name).Obj())
	return n
}

func mustPodInfo(t *testing.T, pod *v1.Pod) *framework.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

package observe

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	configtesting "k8s.io/kubernetes/pkg/scheduler/apis/config/testing"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/record"
)

func TestCheckShadows(t *testing.T) {
	profiles := []string{"live", "other", "binpack", "spread"}
	tests := []struct {
		name    string
		shadows []Shadow
		want    []string
	}{
		{name: "valid", shadows: []Shadow{{Name: "binpack", Live: "live"}, {Name: "spread", Live: "live"}}},
		{name: "unknown shadow", shadows: []Shadow{{Name: "nope", Live: "live"}}, want: []string{`shadow profile "nope": no profile has that schedulerName`}},
		{name: "unknown live", shadows: []Shadow{{Name: "binpack", Live: "nope"}}, want: []string{`shadow profile "binpack": its live profile "nope" is not a profile`}},
		{name: "itself", shadows: []Shadow{{Name: "binpack", Live: "binpack"}}, want: []string{`shadow profile "binpack": shadows itself`}},
		{
			name:    "twice",
			shadows: []Shadow{{Name: "binpack", Live: "live"}, {Name: "binpack", Live: "other"}},
			want:    []string{`shadow profile "binpack": declared more than once`},
		},
		{
			name:    "live for another shadow",
			shadows: []Shadow{{Name: "binpack", Live: "live"}, {Name: "spread", Live: "binpack"}},
			want:    []string{`shadow profile "spread": its live profile "binpack" is itself a shadow`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, err := range CheckShadows(tt.shadows, profiles) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// fullSink keeps every record, in order, as the stream decodes it.
type fullSink struct {
	mu      sync.Mutex
	records []*record.Attempt
}

func (s *fullSink) Add(a *record.Attempt, _ string) error {
	data, err := record.Encode(a)
	if err != nil {
		return err
	}
	var copied record.Attempt
	if err := json.Unmarshal(data, &copied); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, &copied)
	return nil
}

// first returns the first record of each of pods, once there is one.
func (s *fullSink) first(ctx context.Context, t *testing.T, pods ...string) map[string]*record.Attempt {
	t.Helper()
	var out map[string]*record.Attempt
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out = map[string]*record.Attempt{}
		for _, r := range s.records {
			if _, ok := out[r.Pod.Name]; !ok {
				out[r.Pod.Name] = r
			}
		}
		for _, p := range pods {
			if out[p] == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the records of %v: %v", pods, err)
	}
	return out
}

// shadowedScheduler is a scheduler over a fake clientset with shadow
// profiles.
type shadowedScheduler struct {
	*scheduler.Scheduler
	client *clientsetfake.Clientset
	sink   *fullSink
}

const liveProfile = "live"

// newShadowedScheduler builds a scheduler with profiles (v1, defaulted),
// observed with opts' shadows and sampling, over a fake clientset holding
// objects; each pod named in pods is created with the live profile and
// scheduled once, in order.
func newShadowedScheduler(ctx context.Context, t *testing.T, opts Options, profiles []configv1.KubeSchedulerProfile, registry frameworkruntime.Registry, objects ...k8sruntime.Object) *shadowedScheduler {
	t.Helper()
	schedulermetrics.Register()
	cfg := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{Profiles: profiles})
	client := clientsetfake.NewClientset(objects...)
	informerFactory := informers.NewSharedInformerFactory(client, 0)
	sink := &fullSink{}
	opts.Sink = sink
	r := NewRecorder(opts)
	sched, err := scheduler.New(ctx, client, informerFactory, nil,
		r.RecorderFactory(func(string) eventRecorder { return &events.FakeRecorder{} }),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithFrameworkOutOfTreeRegistry(registry),
	)
	if err != nil {
		t.Fatalf("building the scheduler: %v", err)
	}
	if err := r.Install(sched); err != nil {
		t.Fatalf("installing: %v", err)
	}
	t.Cleanup(sched.SchedulingQueue.Close)
	go r.Run(ctx)
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	s := &shadowedScheduler{Scheduler: sched, client: client, sink: sink}
	nodes, pods := 0, 0
	for _, o := range objects {
		switch o := o.(type) {
		case *v1.Node:
			nodes++
		case *v1.Pod:
			if o.Spec.NodeName != "" {
				pods++
			}
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		n, err := sched.Cache.PodCount()
		return sched.Cache.NodeCount() == nodes && n == pods, err
	})
	if err != nil {
		t.Fatalf("waiting for the scheduler's cache: %v", err)
	}
	return s
}

// schedule creates each pod and runs one scheduling cycle for it.
func (s *shadowedScheduler) schedule(ctx context.Context, t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	for _, pod := range pods {
		if _, err := s.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			return len(s.SchedulingQueue.PodsInActiveQ()) > 0, nil
		})
		if err != nil {
			t.Fatalf("waiting for pod %s to be queued: %v", pod.Name, err)
		}
		s.ScheduleOne(ctx)
	}
}

func livePod(name, cpu string) *v1.Pod {
	return st.MakePod().Namespace("default").Name(name).UID(name).SchedulerName(liveProfile).Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Obj()
}

func node(name, cpu string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourcePods: "10"}).Obj()
}

// binpack is the default profile scoring with MostAllocated.
func binpack(name string) configv1.KubeSchedulerProfile {
	return configv1.KubeSchedulerProfile{
		SchedulerName: ptr.To(name),
		PluginConfig: []configv1.PluginConfig{{Name: "NodeResourcesFit", Args: k8sruntime.RawExtension{Object: &configv1.NodeResourcesFitArgs{
			ScoringStrategy: &configv1.ScoringStrategy{Type: configv1.MostAllocated},
		}}}},
	}
}

func defaultProfile(name string) configv1.KubeSchedulerProfile {
	return configv1.KubeSchedulerProfile{SchedulerName: ptr.To(name)}
}

// withoutPlugin is the default profile with plugin disabled at every point.
func withoutPlugin(name, plugin string) configv1.KubeSchedulerProfile {
	return configv1.KubeSchedulerProfile{
		SchedulerName: ptr.To(name),
		Plugins:       &configv1.Plugins{MultiPoint: configv1.PluginSet{Disabled: []configv1.Plugin{{Name: plugin}}}},
	}
}

// TestIdenticalShadowChoosesTheLiveNode runs a shadow identical to its
// live profile: every attempt's shadow run chose the live node, with the
// live node best under the shadow's scores too.
func TestIdenticalShadowChoosesTheLiveNode(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tainted := node("tainted", "16")
	tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}
	sched := newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "same", Live: liveProfile}}},
		[]configv1.KubeSchedulerProfile{defaultProfile(liveProfile), defaultProfile("same")}, nil,
		node("a", "4"), node("b", "8"), tainted)
	names := []string{"p1", "p2", "p3", "p4"}
	for _, name := range names {
		sched.schedule(ctx, t, livePod(name, "1"))
	}
	for name, rec := range sched.sink.first(ctx, t, names...) {
		if len(rec.Shadows) != 1 {
			t.Fatalf("%s: %d shadow runs, want 1", name, len(rec.Shadows))
		}
		s := rec.Shadows[0]
		if s.Profile != "same" || s.Outcome != record.ShadowSameNode || s.Attempt == nil || s.Attempt.SelectedNode != rec.SelectedNode {
			t.Errorf("%s: live node %q, shadow run %+v, want sameNode", name, rec.SelectedNode, s)
			continue
		}
		if s.LiveNodeRank != 1 || s.LiveNodeScore == nil || s.ShadowNodeLiveScore == nil || *s.LiveNodeScore != *s.ShadowNodeLiveScore {
			t.Errorf("%s: live node rank %d, score %v under the shadow, shadow node's live score %v; want rank 1 and equal scores",
				name, s.LiveNodeRank, s.LiveNodeScore, s.ShadowNodeLiveScore)
		}
		if s.Attempt.Profile != "same" || s.Attempt.Nodes.Evaluated != 3 || len(s.Attempt.Plugins) == 0 {
			t.Errorf("%s: the shadow's record is for profile %q, evaluated %d nodes, timed %d plugin runs; want its own record of 3 nodes, with plugin times",
				name, s.Attempt.Profile, s.Attempt.Nodes.Evaluated, len(s.Attempt.Plugins))
		}
	}
}

// TestShadowOutcomes compares shadows that decide otherwise than their
// live profile.
func TestShadowOutcomes(t *testing.T) {
	tainted := node("tainted", "4")
	tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}
	busy := st.MakePod().Namespace("default").Name("busy").UID("busy").Node("a").Req(map[v1.ResourceName]string{v1.ResourceCPU: "3"}).Obj()
	tests := []struct {
		name    string
		live    configv1.KubeSchedulerProfile
		shadow  configv1.KubeSchedulerProfile
		objects []k8sruntime.Object
		want    record.ShadowOutcome
	}{
		{
			name: "binpack chooses the busier node", live: defaultProfile(liveProfile), shadow: binpack("shadow"),
			objects: []k8sruntime.Object{node("a", "8"), node("b", "8"), busy}, want: record.ShadowOtherNode,
		},
		{
			name: "the shadow tolerates nothing the live profile ignores", live: withoutPlugin(liveProfile, "TaintToleration"), shadow: defaultProfile("shadow"),
			objects: []k8sruntime.Object{tainted}, want: record.ShadowLiveOnly,
		},
		{
			name: "the shadow ignores the taint", live: defaultProfile(liveProfile), shadow: withoutPlugin("shadow", "TaintToleration"),
			objects: []k8sruntime.Object{tainted}, want: record.ShadowShadowOnly,
		},
		{
			name: "neither fits", live: defaultProfile(liveProfile), shadow: binpack("shadow"),
			objects: []k8sruntime.Object{node("a", "1")}, want: record.ShadowNeither,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			sched := newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "shadow", Live: liveProfile}}},
				[]configv1.KubeSchedulerProfile{tt.live, tt.shadow}, nil, tt.objects...)
			sched.schedule(ctx, t, livePod("p", "2"))
			rec := sched.sink.first(ctx, t, "p")["p"]
			if len(rec.Shadows) != 1 || rec.Shadows[0].Outcome != tt.want {
				t.Fatalf("shadow runs %+v, want one with outcome %s", rec.Shadows, tt.want)
			}
			s := rec.Shadows[0]
			if tt.want == record.ShadowOtherNode {
				if rec.SelectedNode != "b" || s.Attempt.SelectedNode != "a" || s.LiveNodeRank != 2 || s.LiveNodeScore == nil || s.ShadowNodeLiveScore == nil {
					t.Errorf("live node %q, shadow run %+v; want b live, a under the shadow, b ranked 2nd with both cross scores", rec.SelectedNode, s)
				}
			}
			if tt.want == record.ShadowLiveOnly && len(s.Attempt.Filter) == 0 {
				t.Errorf("the shadow's record has no Filter verdicts: %+v", s.Attempt)
			}
		})
	}
}

// preFilterRejecter rejects every pod at PreFilter.
type preFilterRejecter struct{}

const preFilterRejecterName = "PreFilterRejecter"

func (preFilterRejecter) Name() string { return preFilterRejecterName }

func (preFilterRejecter) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "the shadow turns every pod away")
}

func (preFilterRejecter) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// TestShadowRejectingAtPreFilter gives a shadow a plugin that rejects
// every pod at PreFilter: the live profile finds a node and the shadow
// does not, and its record says why, as the scheduler's message would.
func TestShadowRejectingAtPreFilter(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	registry := frameworkruntime.Registry{
		preFilterRejecterName: func(context.Context, k8sruntime.Object, fwk.Handle) (fwk.Plugin, error) {
			return preFilterRejecter{}, nil
		},
	}
	shadow := defaultProfile("shadow")
	shadow.Plugins = &configv1.Plugins{PreFilter: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: preFilterRejecterName}}}}
	sched := newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "shadow", Live: liveProfile}}},
		[]configv1.KubeSchedulerProfile{defaultProfile(liveProfile), shadow}, registry, node("a", "8"), node("b", "8"))
	sched.schedule(ctx, t, livePod("p", "1"))

	rec := sched.sink.first(ctx, t, "p")["p"]
	if len(rec.Shadows) != 1 || rec.Shadows[0].Outcome != record.ShadowLiveOnly {
		t.Fatalf("shadow runs %+v, want one liveOnly", rec.Shadows)
	}
	got := rec.Shadows[0].Attempt
	want := "0/2 nodes are available: the shadow turns every pod away."
	if got.Result != record.ResultUnschedulable || got.Message != want || got.FailedPoint != record.PreFilter {
		t.Errorf("the shadow's record: result %s, message %q, failed at %s; want unschedulable, %q, at PreFilter", got.Result, got.Message, got.FailedPoint, want)
	}
}

// TestShadowDryRunsPreemption gives a shadow DefaultPreemption that its
// live profile lacks: the shadow says which pod preemption would evict
// and where it would nominate the pod, and nothing is evicted or
// nominated.
func TestShadowDryRunsPreemption(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	low := st.MakePod().Namespace("default").Name("low").UID("low").Node("n").Priority(0).Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	sched := newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "shadow", Live: liveProfile}}},
		[]configv1.KubeSchedulerProfile{withoutPlugin(liveProfile, "DefaultPreemption"), defaultProfile("shadow")}, nil,
		node("n", "1"), low)
	high := livePod("high", "1")
	high.Spec.Priority = ptr.To[int32](100)
	sched.schedule(ctx, t, high)

	rec := sched.sink.first(ctx, t, "high")["high"]
	if len(rec.Shadows) != 1 {
		t.Fatalf("%d shadow runs, want 1", len(rec.Shadows))
	}
	want := []record.ShadowPostFilter{{
		Plugin: "DefaultPreemption", DryRun: true, Code: record.CodeSuccess, NominatedNode: "n",
		Victims: []record.PodRef{{Namespace: "default", Name: "low", UID: "low"}},
	}}
	// The other PostFilter plugins of the default profile (DynamicResources
	// where it has one) are not called.
	var dryRuns []record.ShadowPostFilter
	for _, p := range rec.Shadows[0].PostFilter {
		if p.DryRun {
			dryRuns = append(dryRuns, p)
		}
	}
	if diff := cmp.Diff(want, dryRuns); diff != "" {
		t.Errorf("the shadow's PostFilter (-want +got):\n%s", diff)
	}
	if rec.Shadows[0].Outcome != record.ShadowNeither || rec.NominatedNode != "" || len(rec.Victims) != 0 {
		t.Errorf("outcome %s, live nomination %q and victims %v; want neither, and no nomination or victim", rec.Shadows[0].Outcome, rec.NominatedNode, rec.Victims)
	}
	if _, err := sched.client.CoreV1().Pods("default").Get(ctx, "low", metav1.GetOptions{}); err != nil {
		t.Errorf("the shadow's victim is gone: %v", err)
	}
	got, err := sched.client.CoreV1().Pods("default").Get(ctx, "high", metav1.GetOptions{})
	if err != nil || got.Status.NominatedNodeName != "" {
		t.Errorf("the preemptor was nominated to %q (%v); a shadow nominates nothing", got.Status.NominatedNodeName, err)
	}
}

// countingPostFilter counts its calls.
type countingPostFilter struct{ calls *atomic.Int32 }

const countingPostFilterName = "CountingPostFilter"

func (countingPostFilter) Name() string { return countingPostFilterName }

func (p countingPostFilter) PostFilter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	p.calls.Add(1)
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

// TestShadowPostFilterCallsNoOtherPlugin gives a shadow a PostFilter plugin
// besides DefaultPreemption: it is not called, and the record says so.
func TestShadowPostFilterCallsNoOtherPlugin(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var calls atomic.Int32
	registry := frameworkruntime.Registry{
		countingPostFilterName: func(context.Context, k8sruntime.Object, fwk.Handle) (fwk.Plugin, error) {
			return countingPostFilter{&calls}, nil
		},
	}
	shadow := defaultProfile("shadow")
	shadow.Plugins = &configv1.Plugins{PostFilter: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: countingPostFilterName}}}}
	sched := newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "shadow", Live: liveProfile}}},
		[]configv1.KubeSchedulerProfile{defaultProfile(liveProfile), shadow}, registry, node("n", "1"))
	sched.schedule(ctx, t, livePod("p", "2"))

	rec := sched.sink.first(ctx, t, "p")["p"]
	var dryRun []string
	counterAnswered := false
	for _, p := range rec.Shadows[0].PostFilter {
		if p.DryRun {
			dryRun = append(dryRun, p.Plugin)
		}
		if p.Plugin == countingPostFilterName {
			counterAnswered = true
			if p.DryRun || !strings.Contains(p.Message, "not called") {
				t.Errorf("the plugin's answer %+v; want it not called, and said so", p)
			}
		}
	}
	if !counterAnswered || !cmp.Equal(dryRun, []string{"DefaultPreemption"}) {
		t.Errorf("PostFilter answers %+v; want DefaultPreemption dry-run and the other plugin's entry", rec.Shadows[0].PostFilter)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the shadow called its PostFilter plugin %d times", n)
	}
}

// TestShadowSampling runs the shadow in every second attempt, the first
// included.
func TestShadowSampling(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sched := newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "shadow", Live: liveProfile}}, ShadowSampleEvery: 2},
		[]configv1.KubeSchedulerProfile{defaultProfile(liveProfile), binpack("shadow")}, nil, node("a", "8"))
	names := []string{"p1", "p2", "p3"}
	for _, name := range names {
		sched.schedule(ctx, t, livePod(name, "1"))
	}
	got := map[string]int{}
	for name, rec := range sched.sink.first(ctx, t, names...) {
		got[name] = len(rec.Shadows)
	}
	if diff := cmp.Diff(map[string]int{"p1": 1, "p2": 0, "p3": 1}, got); diff != "" {
		t.Errorf("shadow runs by pod (-want +got):\n%s", diff)
	}
}

// TestPodsNamingAShadowAreNotScheduled creates a pod that names the
// shadow: the scheduler never queues it.
func TestPodsNamingAShadowAreNotScheduled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sched := newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "shadow", Live: liveProfile}}},
		[]configv1.KubeSchedulerProfile{defaultProfile(liveProfile), binpack("shadow")}, nil, node("a", "8"))
	if _, ok := sched.Profiles["shadow"]; ok {
		t.Error("the shadow is among the scheduler's profiles")
	}
	own := st.MakePod().Namespace("default").Name("own").UID("own").SchedulerName("shadow").Obj()
	if _, err := sched.client.CoreV1().Pods("default").Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer delivers events in order: once the live pod is queued,
	// the shadow's pod has been seen.
	sched.schedule(ctx, t, livePod("p", "1"))
	pending, _ := sched.SchedulingQueue.PendingPods()
	for _, p := range pending {
		if p.Name == "own" {
			t.Error("the pod naming the shadow is in the scheduling queue")
		}
	}
	if rec := sched.sink.first(ctx, t, "p")["p"]; rec.Profile != liveProfile {
		t.Errorf("the live pod's record is of profile %q", rec.Profile)
	}
}

// snapshotChanger is a PreFilter plugin that adds a node to the
// scheduler's cache and updates the snapshot, as no plugin should.
type snapshotChanger struct {
	h     fwk.Handle
	cache func() internalcache.Cache
}

const snapshotChangerName = "SnapshotChanger"

func (snapshotChanger) Name() string { return snapshotChangerName }

func (p snapshotChanger) PreFilter(ctx context.Context, _ fwk.CycleState, _ *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	p.cache().AddNode(logger, node("late", "8"))
	if err := p.cache().UpdateSnapshot(logger, p.h.SnapshotSharedLister().(*internalcache.Snapshot)); err != nil {
		return nil, fwk.AsStatus(err)
	}
	return nil, nil
}

func (snapshotChanger) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// TestShadowNotComparedWhenTheSnapshotChanges gives a shadow a plugin
// that changes the snapshot: its run is not compared, and says why.
func TestShadowNotComparedWhenTheSnapshotChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var sched *shadowedScheduler
	registry := frameworkruntime.Registry{
		snapshotChangerName: func(_ context.Context, _ k8sruntime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return snapshotChanger{h: h, cache: func() internalcache.Cache { return sched.Cache }}, nil
		},
	}
	shadow := defaultProfile("shadow")
	shadow.Plugins = &configv1.Plugins{PreFilter: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: snapshotChangerName}}}}
	sched = newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "shadow", Live: liveProfile}}},
		[]configv1.KubeSchedulerProfile{defaultProfile(liveProfile), shadow}, registry, node("a", "8"))
	sched.schedule(ctx, t, livePod("p", "1"))

	rec := sched.sink.first(ctx, t, "p")["p"]
	want := record.ShadowRun{Profile: "shadow", Outcome: record.ShadowNotCompared, NotComparedReason: record.NotComparedSnapshotChanged}
	if len(rec.Shadows) != 1 {
		t.Fatalf("%d shadow runs, want 1", len(rec.Shadows))
	}
	got := rec.Shadows[0]
	got.Attempt = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the shadow run (-want +got):\n%s", diff)
	}
}

// closingPlugin is a PreFilter plugin that tells when it is closed.
type closingPlugin struct{ closed chan struct{} }

const closingPluginName = "Closing"

func (closingPlugin) Name() string { return closingPluginName }

func (closingPlugin) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, nil
}

func (closingPlugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p closingPlugin) Close() error {
	close(p.closed)
	return nil
}

// TestShadowClosedWithTheRecorder closes a shadow's plugins when the
// Recorder's context ends, as the scheduler closes its profiles'.
func TestShadowClosedWithTheRecorder(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	closed := make(chan struct{})
	registry := frameworkruntime.Registry{
		closingPluginName: func(context.Context, k8sruntime.Object, fwk.Handle) (fwk.Plugin, error) {
			return closingPlugin{closed}, nil
		},
	}
	shadow := defaultProfile("shadow")
	shadow.Plugins = &configv1.Plugins{PreFilter: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: closingPluginName}}}}
	newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "shadow", Live: liveProfile}}},
		[]configv1.KubeSchedulerProfile{defaultProfile(liveProfile), shadow}, registry, node("a", "8"))
	select {
	case <-closed:
		t.Fatal("the shadow's plugin was closed while the Recorder runs")
	default:
	}
	cancel()
	select {
	case <-closed:
	case <-time.After(wait.ForeverTestTimeout):
		t.Error("the shadow's plugin was not closed when the Recorder's context ended")
	}
}

// failingFilter fails on every node with an internal error.
type failingFilter struct{}

const failingFilterName = "FailingFilter"

func (failingFilter) Name() string { return failingFilterName }

func (failingFilter) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	return fwk.AsStatus(errors.New("the filter broke"))
}

// TestShadowNotComparedWhenTheLiveAttemptFails gives the live profile a
// filter that fails with an internal error: the shadow's run is not
// compared, and says why.
func TestShadowNotComparedWhenTheLiveAttemptFails(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	registry := frameworkruntime.Registry{
		failingFilterName: func(context.Context, k8sruntime.Object, fwk.Handle) (fwk.Plugin, error) { return failingFilter{}, nil },
	}
	live := defaultProfile(liveProfile)
	live.Plugins = &configv1.Plugins{Filter: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: failingFilterName}}}}
	sched := newShadowedScheduler(ctx, t, Options{Shadows: []Shadow{{Name: "shadow", Live: liveProfile}}},
		[]configv1.KubeSchedulerProfile{live, defaultProfile("shadow")}, registry, node("a", "8"))
	sched.schedule(ctx, t, livePod("p", "1"))

	rec := sched.sink.first(ctx, t, "p")["p"]
	if rec.Result != record.ResultError || len(rec.Shadows) != 1 {
		t.Fatalf("live result %s with shadow runs %+v; want an error and one run", rec.Result, rec.Shadows)
	}
	got := rec.Shadows[0]
	if got.Outcome != record.ShadowNotCompared || got.NotComparedReason != record.NotComparedLiveError || got.Attempt.SelectedNode != "a" {
		t.Errorf("the shadow run %+v (chose %q); want notCompared for the live error, its own choice kept", got, got.Attempt.SelectedNode)
	}
}

// TestInstallRejectsAnUnknownShadow names the missing profile.
func TestInstallRejectsAnUnknownShadow(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	schedulermetrics.Register()
	cfg := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{Profiles: []configv1.KubeSchedulerProfile{defaultProfile(liveProfile)}})
	client := clientsetfake.NewClientset()
	r := NewRecorder(Options{Sink: &fullSink{}, Shadows: []Shadow{{Name: "binpack", Live: liveProfile}}})
	sched, err := scheduler.New(ctx, client, informers.NewSharedInformerFactory(client, 0), nil,
		r.RecorderFactory(func(string) eventRecorder { return &events.FakeRecorder{} }), scheduler.WithProfiles(cfg.Profiles...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.SchedulingQueue.Close)
	err = r.Install(sched)
	if err == nil || !strings.Contains(err.Error(), `shadow profile "binpack"`) {
		t.Errorf("Install: %v; want an error naming the shadow profile", err)
	}
}

package observe

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	configtesting "k8s.io/kubernetes/pkg/scheduler/apis/config/testing"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/record"
)

func newTestFramework(t *testing.T, registry frameworkruntime.Registry, profile config.KubeSchedulerProfile) fwk.Handle {
	t.Helper()
	schedulermetrics.Register()
	ctx := t.Context()
	client := clientsetfake.NewClientset()
	f, err := frameworkruntime.NewFramework(ctx, registry, &profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
		frameworkruntime.WithSnapshotSharedLister(internalcache.NewEmptySnapshot()),
	)
	if err != nil {
		t.Fatalf("building framework: %v", err)
	}
	return f
}

// unwrapNames turns wrapper names back into plugin names.
func unwrapNames(p *config.Plugins) *config.Plugins {
	for _, set := range pluginSets(p) {
		for i := range set.Enabled {
			set.Enabled[i].Name = PluginName(set.Enabled[i].Name)
		}
	}
	return p
}

// TestObservedProfileEnablesTheSamePlugins builds the upstream default profile
// and a multiPoint profile with overrides twice, plainly and observed: every
// extension point must list the same plugins, in the same order, with the
// same weights. This holds only if each wrapper implements exactly the
// interfaces of the plugin it wraps.
func TestObservedProfileEnablesTheSamePlugins(t *testing.T) {
	tests := []struct {
		name    string
		profile configv1.KubeSchedulerProfile
	}{
		{name: "default", profile: configv1.KubeSchedulerProfile{SchedulerName: ptr.To("default")}},
		{name: "multiPoint with overrides", profile: configv1.KubeSchedulerProfile{
			SchedulerName: ptr.To("custom"),
			Plugins: &configv1.Plugins{
				MultiPoint: configv1.PluginSet{
					Enabled:  []configv1.Plugin{{Name: "ImageLocality", Weight: ptr.To[int32](7)}},
					Disabled: []configv1.Plugin{{Name: "NodeResourcesBalancedAllocation"}},
				},
				Score:  configv1.PluginSet{Enabled: []configv1.Plugin{{Name: "NodeAffinity", Weight: ptr.To[int32](9)}}},
				Filter: configv1.PluginSet{Disabled: []configv1.Plugin{{Name: "NodePorts"}}},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{Profiles: []configv1.KubeSchedulerProfile{tt.profile}})
			plain := newTestFramework(t, frameworkplugins.NewInTreeRegistry(), cfg.Profiles[0])

			r := NewRecorder(Options{Sink: discard{}})
			registry, profiles, err := r.Observe(nil, cfg.Profiles)
			if err != nil {
				t.Fatal(err)
			}
			// The registry holds wrappers only; scheduler.New adds the in-tree plugins.
			if err := registry.Merge(frameworkplugins.NewInTreeRegistry()); err != nil {
				t.Fatal(err)
			}
			observed := newTestFramework(t, registry, profiles[0])

			want := plain.(interface{ ListPlugins() *config.Plugins }).ListPlugins()
			got := unwrapNames(observed.(interface{ ListPlugins() *config.Plugins }).ListPlugins())
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("enabled plugins differ (-plain +observed):\n%s", diff)
			}
			for _, p := range cfg.Profiles[0].Plugins.MultiPoint.Enabled {
				if strings.HasPrefix(p.Name, namePrefix) {
					t.Fatalf("Observe changed the caller's profiles: %s", p.Name)
				}
			}
		})
	}
}

// fakeFilter implements EnqueueExtensions, PreFilter and Filter with
// results set by the test.
type fakeFilter struct {
	preFilterResult *fwk.PreFilterResult
	preFilterStatus *fwk.Status
	filterStatus    *fwk.Status
}

func (f *fakeFilter) Name() string { return "FakeScorer" }
func (f *fakeFilter) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}}}, nil
}
func (f *fakeFilter) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return f.preFilterResult, f.preFilterStatus
}
func (f *fakeFilter) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
func (f *fakeFilter) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	return f.filterStatus
}

// fakeScorer implements the interfaces of TaintToleration, and
// NormalizeScore when normalize is set.
type fakeScorer struct {
	fakeFilter
	score     int64
	normalize bool
}

func (f *fakeScorer) PreScore(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) *fwk.Status {
	return fwk.NewStatus(fwk.Skip)
}
func (f *fakeScorer) Score(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return f.score, nil
}
func (f *fakeScorer) ScoreExtensions() fwk.ScoreExtensions {
	if f.normalize {
		return f
	}
	return nil
}
func (f *fakeScorer) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	for i := range scores {
		scores[i].Score *= 2
	}
	return fwk.NewStatus(fwk.Success, "normalized")
}
func (f *fakeScorer) SignPod(context.Context, *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{{Key: "fake", Value: 1}}, nil
}

// fakePermit implements the interfaces of DeferredPodScheduling.
type fakePermit struct{ fakeFilter }

func (f *fakePermit) Permit(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.Status, time.Duration) {
	return fwk.NewStatus(fwk.Wait, "waiting for a sibling"), 42 * time.Second
}

// fakeUnusual implements a set of interfaces no compiled-in plugin has.
type fakeUnusual struct{}

func (fakeUnusual) Name() string { return "Unusual" }
func (fakeUnusual) Bind(context.Context, fwk.CycleState, *v1.Pod, string) *fwk.Status {
	return nil
}
func (fakeUnusual) PostBind(context.Context, fwk.CycleState, *v1.Pod, string) {}

type discard struct{}

func (discard) Add(*record.Attempt) error { return nil }

func wrapOrFail(t *testing.T, inner fwk.Plugin) fwk.Plugin {
	t.Helper()
	w, err := NewRecorder(Options{Sink: discard{}}).wrap("profile", inner.Name(), inner)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func statusDiff(want, got *fwk.Status) string {
	return cmp.Diff(want, got, cmp.Comparer(func(a, b *fwk.Status) bool { return a.Equal(b) }))
}

func TestWrapperPassesResultsThrough(t *testing.T) {
	ctx := context.Background()
	pod := st.MakePod().Name("p").UID("p").Obj()
	nodeInfo := fwk.NodeInfo(nil)
	state := fwk.CycleState(nil)
	tests := []struct {
		name  string
		inner *fakeScorer
	}{
		{"success", &fakeScorer{score: 7}},
		{"skip and node subset", &fakeScorer{
			fakeFilter: fakeFilter{
				preFilterResult: &fwk.PreFilterResult{NodeNames: sets.New("a", "b")},
				preFilterStatus: fwk.NewStatus(fwk.Skip),
				filterStatus:    fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)").WithPlugin("FakeScorer"),
			},
			score: 3, normalize: true,
		}},
		{"error", &fakeScorer{fakeFilter: fakeFilter{preFilterStatus: fwk.AsStatus(context.DeadlineExceeded), filterStatus: fwk.NewStatus(fwk.Error, "boom")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := wrapOrFail(t, tt.inner)
			if w.Name() != WrappedName("FakeScorer") {
				t.Errorf("Name() = %q", w.Name())
			}
			result, s := w.(fwk.PreFilterPlugin).PreFilter(ctx, state, pod, nil)
			if result != tt.inner.preFilterResult {
				t.Errorf("PreFilterResult %v, want the plugin's %v", result, tt.inner.preFilterResult)
			}
			if diff := statusDiff(tt.inner.preFilterStatus, s); diff != "" {
				t.Errorf("PreFilter status (-want +got):\n%s", diff)
			}
			if w.(fwk.PreFilterPlugin).PreFilterExtensions() != nil {
				t.Error("PreFilterExtensions is not nil although the plugin's is")
			}
			if diff := statusDiff(tt.inner.filterStatus, w.(fwk.FilterPlugin).Filter(ctx, state, pod, nodeInfo)); diff != "" {
				t.Errorf("Filter status (-want +got):\n%s", diff)
			}
			if !w.(fwk.PreScorePlugin).PreScore(ctx, state, pod, nil).IsSkip() {
				t.Error("PreScore Skip did not pass through")
			}
			score, s := w.(fwk.ScorePlugin).Score(ctx, state, pod, nodeInfo)
			if score != tt.inner.score || !s.IsSuccess() {
				t.Errorf("Score = %d, %v; want %d, success", score, s, tt.inner.score)
			}
			ext := w.(fwk.ScorePlugin).ScoreExtensions()
			if (ext == nil) != !tt.inner.normalize {
				t.Fatalf("ScoreExtensions() nil = %v, plugin normalizes = %v", ext == nil, tt.inner.normalize)
			}
			if ext != nil {
				scores := fwk.NodeScoreList{{Name: "a", Score: 10}}
				if s := ext.NormalizeScore(ctx, state, pod, scores); s.Message() != "normalized" || scores[0].Score != 20 {
					t.Errorf("NormalizeScore = %v, scores %v; want the plugin's status and doubled scores", s, scores)
				}
			}
			events, err := w.(fwk.EnqueueExtensions).EventsToRegister(ctx)
			want, _ := tt.inner.EventsToRegister(ctx)
			if err != nil || len(events) != 1 || events[0].Event != want[0].Event {
				t.Errorf("EventsToRegister = %v, %v; want the plugin's %v", events, err, want)
			}
			fragments, _ := w.(fwk.SignPlugin).SignPod(ctx, pod)
			if len(fragments) != 1 || fragments[0].Key != "fake" {
				t.Errorf("SignPod = %v, want the plugin's fragments", fragments)
			}
		})
	}
}

func TestWrapperExposesExactlyThePluginsInterfaces(t *testing.T) {
	scorer := wrapOrFail(t, &fakeScorer{})
	for name, implemented := range map[string]bool{
		"PreFilter": isA[fwk.PreFilterPlugin](scorer), "Filter": isA[fwk.FilterPlugin](scorer),
		"Score": isA[fwk.ScorePlugin](scorer), "Sign": isA[fwk.SignPlugin](scorer),
		"Permit": !isA[fwk.PermitPlugin](scorer), "PostFilter": !isA[fwk.PostFilterPlugin](scorer),
		"Reserve": !isA[fwk.ReservePlugin](scorer), "Bind": !isA[fwk.BindPlugin](scorer),
		"QueueSort": !isA[fwk.QueueSortPlugin](scorer), "PreEnqueue": !isA[fwk.PreEnqueuePlugin](scorer),
	} {
		if !implemented {
			t.Errorf("wrapper of a scorer: %s exposure differs from the plugin's", name)
		}
	}
	permit := wrapOrFail(t, &fakePermit{})
	s, wait := permit.(fwk.PermitPlugin).Permit(context.Background(), nil, st.MakePod().Obj(), "node")
	if !s.IsWait() || wait != 42*time.Second {
		t.Errorf("Permit = %v, %s; want the plugin's Wait and 42s", s, wait)
	}
	if isA[fwk.ScorePlugin](permit) {
		t.Error("wrapper of a permit plugin implements Score")
	}

	_, err := NewRecorder(Options{Sink: discard{}}).wrap("profile", "Unusual", fakeUnusual{})
	if err == nil || !strings.Contains(err.Error(), `plugin "Unusual" implements Bind, PostBind`) {
		t.Errorf("wrapping an unknown interface set: err = %v, want one naming the plugin and its interfaces", err)
	}
}

func isA[T any](p fwk.Plugin) bool {
	_, ok := p.(T)
	return ok
}

func TestWrapProfiles(t *testing.T) {
	profiles := []config.KubeSchedulerProfile{{
		SchedulerName: "p",
		Plugins: &config.Plugins{
			MultiPoint: config.PluginSet{Enabled: []config.Plugin{{Name: "A", Weight: 3}}, Disabled: []config.Plugin{{Name: "*"}}},
			Filter:     config.PluginSet{Disabled: []config.Plugin{{Name: "B"}}},
			Score:      config.PluginSet{Enabled: []config.Plugin{{Name: "C", Weight: 5}}},
		},
		PluginConfig: []config.PluginConfig{{Name: "A"}},
	}}
	WrapProfiles(profiles)
	want := []config.KubeSchedulerProfile{{
		SchedulerName: "p",
		Plugins: &config.Plugins{
			MultiPoint: config.PluginSet{Enabled: []config.Plugin{{Name: "schedscope:A", Weight: 3}}, Disabled: []config.Plugin{{Name: "*"}}},
			Filter:     config.PluginSet{Disabled: []config.Plugin{{Name: "schedscope:B"}}},
			Score:      config.PluginSet{Enabled: []config.Plugin{{Name: "schedscope:C", Weight: 5}}},
		},
		PluginConfig: []config.PluginConfig{{Name: "schedscope:A"}},
	}}
	if diff := cmp.Diff(want, profiles); diff != "" {
		t.Errorf("wrapped profiles (-want +got):\n%s", diff)
	}
}

// TestPluginSetsCoverEveryExtensionPoint fails when the scheduler's
// configuration gains an extension point that WrapProfiles would miss.
func TestPluginSetsCoverEveryExtensionPoint(t *testing.T) {
	var p config.Plugins
	covered := map[*config.PluginSet]bool{}
	for _, set := range pluginSets(&p) {
		covered[set.PluginSet] = true
	}
	v := reflect.ValueOf(&p).Elem()
	for i := range v.NumField() {
		if set, ok := v.Field(i).Addr().Interface().(*config.PluginSet); ok && !covered[set] {
			t.Errorf("extension point %s is not wrapped", v.Type().Field(i).Name)
		}
	}
}

// TestObservedConfigFile checks that the transformed default configuration,
// decoded again with defaults as a harness would, enables the same plugins
// as the default profile, under wrapper names only.
func TestObservedConfigFile(t *testing.T) {
	data, err := ObservedConfigFile("")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/observed.yaml"
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var observed config.KubeSchedulerConfiguration
	if _, _, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, &observed); err != nil {
		t.Fatalf("decoding the observed configuration: %v\n%s", err, data)
	}
	defaults := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{})
	plain := newTestFramework(t, frameworkplugins.NewInTreeRegistry(), defaults.Profiles[0])
	registry, _, err := NewRecorder(Options{Sink: discard{}}).Observe(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Merge(frameworkplugins.NewInTreeRegistry()); err != nil {
		t.Fatal(err)
	}
	wrapped := newTestFramework(t, registry, observed.Profiles[0])
	want := plain.(interface{ ListPlugins() *config.Plugins }).ListPlugins()
	gotWrapped := wrapped.(interface{ ListPlugins() *config.Plugins }).ListPlugins()
	for _, set := range pluginSets(gotWrapped) {
		for _, p := range set.Enabled {
			if !strings.HasPrefix(p.Name, namePrefix) {
				t.Errorf("%s enables %s, which is not observed", set.name, p.Name)
			}
		}
	}
	if diff := cmp.Diff(want, unwrapNames(gotWrapped)); diff != "" {
		t.Errorf("enabled plugins differ (-default +observed file):\n%s", diff)
	}
}

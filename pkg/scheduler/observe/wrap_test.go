package observe

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	configtesting "k8s.io/kubernetes/pkg/scheduler/apis/config/testing"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/record"
)

// newFramework builds a framework over fakes, as the scheduler builds one.
func newFramework(t *testing.T, registry frameworkruntime.Registry, profile config.KubeSchedulerProfile) (fwk.Handle, error) {
	t.Helper()
	schedulermetrics.Register()
	client := clientsetfake.NewClientset()
	return frameworkruntime.NewFramework(t.Context(), registry, &profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
		frameworkruntime.WithSnapshotSharedLister(internalcache.NewEmptySnapshot()),
	)
}

func mustFramework(t *testing.T, registry frameworkruntime.Registry, profile config.KubeSchedulerProfile) framework.Framework {
	t.Helper()
	f, err := newFramework(t, registry, profile)
	if err != nil {
		t.Fatalf("building framework: %v", err)
	}
	return f.(framework.Framework)
}

// TestObservedProfileEnablesTheSamePlugins builds the upstream default
// profile and a multiPoint profile with overrides, observes them, and
// checks that every extension point lists the same plugins, in the same
// order, with the same weights and names as before, each observed point's
// plugins now inside a wrapper.
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
			f := mustFramework(t, frameworkplugins.NewInTreeRegistry(), cfg.Profiles[0])
			want := f.ListPlugins()
			r := NewRecorder(Options{Sink: discard{}})
			if err := r.observePlugins(r.profileTable("p"), f); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, f.ListPlugins()); diff != "" {
				t.Errorf("enabled plugins differ (-plain +observed):\n%s", diff)
			}
			filters := frameworkFieldOf[[]fwk.FilterPlugin](t, f, "filterPlugins")
			if len(filters) == 0 {
				t.Fatal("no filter plugins")
			}
			for _, p := range filters {
				if _, ok := p.(filterPlugin); !ok {
					t.Errorf("filter plugin %s is a %T, not observed", p.Name(), p)
				}
			}
		})
	}
}

func frameworkFieldOf[T any](t *testing.T, f framework.Framework, name string) T {
	t.Helper()
	s, err := frameworkFields(f)
	if err != nil {
		t.Fatal(err)
	}
	return s.field(name).Interface().(T)
}

// TestEveryPluginListIsKnown fails when the framework gains a plugin list
// that observePlugins neither observes nor knowingly leaves alone, such as
// a new extension point in a new Kubernetes release.
func TestEveryPluginListIsKnown(t *testing.T) {
	leftAlone := map[string]bool{}
	for _, name := range leftAlonePluginLists {
		leftAlone[name] = true
	}
	observed := map[string]bool{}
	for _, s := range observedSlices {
		observed[s.name] = true
	}
	f := mustFramework(t, frameworkplugins.NewInTreeRegistry(), configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{}).Profiles[0])
	typ := reflect.TypeOf(f).Elem()
	plugin := reflect.TypeFor[fwk.Plugin]()
	for i := range typ.NumField() {
		field := typ.Field(i)
		if field.Type.Kind() != reflect.Slice || field.Type.Elem().Kind() != reflect.Interface || !field.Type.Elem().Implements(plugin) {
			continue
		}
		if !observed[field.Name] && !leftAlone[field.Name] {
			t.Errorf("the framework's plugin list %s (%s) is neither observed nor known to be left alone", field.Name, field.Type)
		}
		delete(observed, field.Name)
		delete(leftAlone, field.Name)
	}
	for name := range observed {
		t.Errorf("observed plugin list %s is not a field of the framework", name)
	}
	for name := range leftAlone {
		t.Errorf("plugin list %s, left alone, is not a field of the framework", name)
	}
}

// otherFramework is a framework that is not kube-scheduler's implementation.
type otherFramework struct{ framework.Framework }

func TestObservePluginsRefusesAnotherFramework(t *testing.T) {
	r := NewRecorder(Options{Sink: discard{}})
	err := r.observePlugins(r.profileTable("p"), &otherFramework{})
	if err == nil || !strings.Contains(err.Error(), "has no field preFilterPlugins") {
		t.Errorf("observing another framework: err = %v, want one naming the missing field", err)
	}
}

// fakeFilter is a Filter plugin with a status set by the test.
type fakeFilter struct{ status *fwk.Status }

func (f *fakeFilter) Name() string { return "FakeFilter" }
func (f *fakeFilter) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	return f.status
}

// observedFilter returns the wrapper of a fakeFilter registered in r's profile.
func observedFilter(r *Recorder, profile string) fwk.FilterPlugin {
	table := r.profileTable(profile)
	return filterPlugin{FilterPlugin: &fakeFilter{}, o: &observed{table: table, index: table.add("FakeFilter")}}
}

func TestWrapperKeepsThePluginsName(t *testing.T) {
	w := observedFilter(NewRecorder(Options{Sink: discard{}}), "p")
	if w.Name() != "FakeFilter" {
		t.Errorf("Name() = %q, want the plugin's", w.Name())
	}
	if s := w.Filter(context.Background(), nil, st.MakePod().Obj(), nil); s != nil {
		t.Errorf("Filter = %v, want the plugin's nil", s)
	}
}

type discard struct{}

func (discard) Add(*record.Attempt, string) error { return nil }

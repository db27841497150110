package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// capability is a set of framework interfaces, one bit each.
type capability uint32

// namePrefix marks the registry name of an observing wrapper. The scheduling
// framework needs distinct registry names, so the wrapper of plugin X is
// registered as namePrefix+X; records, traces and logs use X.
const namePrefix = "schedscope:"

// WrappedName returns the registry name of the wrapper of plugin name.
func WrappedName(name string) string { return namePrefix + name }

// PluginName returns the plugin name behind a registry name, which is the
// name itself for a plugin that is not wrapped.
func PluginName(registryName string) string { return strings.TrimPrefix(registryName, namePrefix) }

// Observe returns what to give scheduler.New so that every plugin of every
// profile, in-tree or from outOfTree, runs inside its observing wrapper: the
// out-of-tree registry (wrappers of all plugins, under WrappedName) and a
// copy of profiles that names the wrappers. profiles are not changed. Call
// Install on the scheduler it builds.
func (r *Recorder) Observe(outOfTree frameworkruntime.Registry, profiles []config.KubeSchedulerProfile) (frameworkruntime.Registry, []config.KubeSchedulerProfile, error) {
	all := frameworkplugins.NewInTreeRegistry()
	if err := all.Merge(outOfTree); err != nil {
		return nil, nil, err
	}
	if err := checkPlugins(profiles, all); err != nil {
		return nil, nil, err
	}
	wrapped := make([]config.KubeSchedulerProfile, len(profiles))
	for i := range profiles {
		wrapped[i] = *profiles[i].DeepCopy()
	}
	WrapProfiles(wrapped)
	return r.registry(all), wrapped, nil
}

// registry returns a registry holding an observing wrapper for every plugin
// of base, under WrappedName.
func (r *Recorder) registry(base frameworkruntime.Registry) frameworkruntime.Registry {
	wrapped := make(frameworkruntime.Registry, len(base))
	for name, factory := range base {
		wrapped[WrappedName(name)] = r.wrapFactory(name, factory)
	}
	return wrapped
}

func (r *Recorder) wrapFactory(name string, factory frameworkruntime.PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		args, err := typedArgs(name, args)
		if err != nil {
			return nil, err
		}
		profile := ""
		if p, ok := h.(interface{ ProfileName() string }); ok {
			profile = p.ProfileName()
		}
		inner, err := factory(ctx, args, &observedHandle{Handle: h, recorder: r})
		if err != nil {
			return nil, err
		}
		return r.wrap(profile, name, inner)
	}
}

// typedArgs decodes args that reached a wrapper undecoded. The scheduler
// decodes pluginConfig args into the plugin's typed args by plugin name; a
// configuration file that already names the wrappers (ObservedConfigFile)
// leaves them raw, so they are decoded here as the plugin's own args.
func typedArgs(plugin string, args runtime.Object) (runtime.Object, error) {
	raw, ok := args.(*runtime.Unknown)
	if !ok {
		return args, nil
	}
	gvk := configv1.SchemeGroupVersion.WithKind(plugin + "Args")
	if !scheme.Scheme.Recognizes(gvk) {
		return args, nil
	}
	typed, _, err := scheme.Codecs.UniversalDecoder().Decode(raw.Raw, &gvk, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding the args of plugin %q: %w", plugin, err)
	}
	return typed, nil
}

// wrap returns the observing wrapper of inner, of the type that implements
// exactly the interfaces inner implements.
func (r *Recorder) wrap(profile, name string, inner fwk.Plugin) (fwk.Plugin, error) {
	var caps capability
	var names []string
	for _, c := range capabilityChecks {
		if c.implemented(inner) {
			caps |= c.bit
			names = append(names, c.name)
		}
	}
	build, ok := wrappers[caps]
	if !ok {
		return nil, fmt.Errorf("plugin %q implements %s, a set of extension points with no observing wrapper; regenerate the wrappers with the plugin compiled in (make generate)", name, strings.Join(names, ", "))
	}
	table := r.profileTable(profile)
	o := &observed{
		registryName: WrappedName(name),
		table:        table,
		index:        table.add(name),
		inner:        inner,
	}
	o.preFilter, _ = inner.(fwk.PreFilterPlugin)
	o.filter, _ = inner.(fwk.FilterPlugin)
	o.postFilter, _ = inner.(fwk.PostFilterPlugin)
	o.preScore, _ = inner.(fwk.PreScorePlugin)
	o.score, _ = inner.(fwk.ScorePlugin)
	o.reserve, _ = inner.(fwk.ReservePlugin)
	o.permit, _ = inner.(fwk.PermitPlugin)
	o.preBind, _ = inner.(fwk.PreBindPlugin)
	o.bind, _ = inner.(fwk.BindPlugin)
	o.postBind, _ = inner.(fwk.PostBindPlugin)
	return build(o), nil
}

// WrapProfiles rewrites profiles in place so that every plugin they name,
// at every extension point and in multiPoint, enabled or disabled, and every
// pluginConfig entry, refers to its observing wrapper. Weights, order and
// args are kept. The "*" wildcard is kept as it is.
func WrapProfiles(profiles []config.KubeSchedulerProfile) {
	for i := range profiles {
		p := &profiles[i]
		if p.Plugins != nil {
			for _, set := range pluginSets(p.Plugins) {
				wrapPlugins(set.Enabled)
				wrapPlugins(set.Disabled)
			}
		}
		for j := range p.PluginConfig {
			p.PluginConfig[j].Name = WrappedName(p.PluginConfig[j].Name)
		}
	}
}

// checkPlugins reports the first enabled plugin that is not in the
// registry, naming its field; without it the scheduler would report the
// wrapper's name instead of the plugin's. It also rejects negative score
// weights, which kube-scheduler accepts and which invert a plugin's intent.
func checkPlugins(profiles []config.KubeSchedulerProfile, registry frameworkruntime.Registry) error {
	for i, p := range profiles {
		if p.Plugins == nil {
			continue
		}
		for _, set := range pluginSets(p.Plugins) {
			for j, plugin := range set.PluginSet.Enabled {
				if _, ok := registry[plugin.Name]; !ok {
					return fmt.Errorf("profiles[%d].plugins.%s.enabled[%d].name: plugin %q does not exist", i, set.name, j, plugin.Name)
				}
				if plugin.Weight < 0 {
					return fmt.Errorf("profiles[%d].plugins.%s.enabled[%d].weight: %d must not be negative", i, set.name, j, plugin.Weight)
				}
			}
		}
	}
	return nil
}

// UnwrapError returns err with wrapper names replaced by plugin names, for
// errors the framework reports about wrapped plugins.
func UnwrapError(err error) error {
	if err == nil || !strings.Contains(err.Error(), namePrefix) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), namePrefix, ""))
}

func wrapPlugins(plugins []config.Plugin) {
	for i := range plugins {
		if plugins[i].Name != "*" {
			plugins[i].Name = WrappedName(plugins[i].Name)
		}
	}
}

// namedPluginSet is an extension point's plugin set and its field name.
type namedPluginSet struct {
	name string
	*config.PluginSet
}

func pluginSets(p *config.Plugins) []namedPluginSet {
	return []namedPluginSet{
		{"preEnqueue", &p.PreEnqueue}, {"queueSort", &p.QueueSort}, {"preFilter", &p.PreFilter}, {"filter", &p.Filter},
		{"postFilter", &p.PostFilter}, {"preScore", &p.PreScore}, {"score", &p.Score}, {"reserve", &p.Reserve},
		{"permit", &p.Permit}, {"preBind", &p.PreBind}, {"bind", &p.Bind}, {"postBind", &p.PostBind},
		{"placementGenerate", &p.PlacementGenerate}, {"placementScore", &p.PlacementScore}, {"podGroupPostFilter", &p.PodGroupPostFilter},
		{"multiPoint", &p.MultiPoint},
	}
}

// observed is what every wrapper holds: the plugin it wraps, typed once per
// interface so that no call pays for a type assertion.
type observed struct {
	registryName string
	table        *profileTable
	index        int
	inner        fwk.Plugin

	preFilter  fwk.PreFilterPlugin
	filter     fwk.FilterPlugin
	postFilter fwk.PostFilterPlugin
	preScore   fwk.PreScorePlugin
	score      fwk.ScorePlugin
	reserve    fwk.ReservePlugin
	permit     fwk.PermitPlugin
	preBind    fwk.PreBindPlugin
	bind       fwk.BindPlugin
	postBind   fwk.PostBindPlugin
}

// timed adds the time since start to the plugin's total at point.
func (o *observed) timed(state fwk.CycleState, p point, start time.Time) *attempt {
	a := attemptFrom(state)
	if a != nil {
		a.addPluginTime(o.index, p, time.Since(start))
	}
	return a
}

// perNodeClock returns the clock for a per-node call, Filter or Score, if
// this call is to be timed. These run for every node, in parallel, inside
// the scheduling algorithm, so the attempt comes from the profile's current
// one rather than a CycleState lookup.
func (o *observed) perNodeClock(p point) *pluginClock {
	a := o.table.current.Load()
	if a == nil {
		return nil
	}
	if c := a.clock(o.index, p); c != nil && c.sample() {
		return c
	}
	return nil
}

// once records a plugin's status at a point called once per attempt.
func (o *observed) once(state fwk.CycleState, p point, start time.Time, s *fwk.Status) {
	if a := o.timed(state, p, start); a != nil {
		a.addPluginStatus(o.index, p, s, 0)
	}
}

// named gives a wrapper its registry name.
type named struct{ o *observed }

func (w named) Name() string { return w.o.registryName }

type preEnqueuePoint struct{ o *observed }

func (w preEnqueuePoint) PreEnqueue(ctx context.Context, p *v1.Pod) *fwk.Status {
	return w.o.inner.(fwk.PreEnqueuePlugin).PreEnqueue(ctx, p)
}

type queueSortPoint struct{ o *observed }

func (w queueSortPoint) Less(a, b fwk.QueuedEntityInfo) bool {
	return w.o.inner.(fwk.QueueSortPlugin).Less(a, b)
}

type enqueueExtensionsPoint struct{ o *observed }

func (w enqueueExtensionsPoint) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return w.o.inner.(fwk.EnqueueExtensions).EventsToRegister(ctx)
}

type preFilterPoint struct{ o *observed }

func (w preFilterPoint) PreFilter(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	start := time.Now()
	result, s := w.o.preFilter.PreFilter(ctx, state, p, nodes)
	if a := w.o.timed(state, pointPreFilter, start); a != nil {
		a.addPreFilter(w.o.index, result, s)
	}
	return result, s
}

// PreFilterExtensions returns the wrapped plugin's extensions as they are:
// they run while the scheduler simulates pods on nodes, which is not part of
// the decision being recorded.
func (w preFilterPoint) PreFilterExtensions() fwk.PreFilterExtensions {
	return w.o.preFilter.PreFilterExtensions()
}

type filterPoint struct{ o *observed }

func (w filterPoint) Filter(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	c := w.o.perNodeClock(pointFilter)
	if c == nil {
		return w.o.filter.Filter(ctx, state, p, nodeInfo)
	}
	start := monotonicNow()
	s := w.o.filter.Filter(ctx, state, p, nodeInfo)
	c.add(monotonicNow() - start)
	return s
}

type postFilterPoint struct{ o *observed }

func (w postFilterPoint) PostFilter(ctx context.Context, state fwk.CycleState, p *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	// PostFilter runs after the scheduling algorithm, so the Filter calls
	// preemption makes while simulating evictions are not timed as Filter.
	start := time.Now()
	result, s := w.o.postFilter.PostFilter(ctx, state, p, m)
	w.o.once(state, pointPostFilter, start, s)
	return result, s
}

type podGroupPostFilterPoint struct{ o *observed }

func (w podGroupPostFilterPoint) PodGroupPostFilter(ctx context.Context, state fwk.PodGroupCycleState, pg fwk.PodGroupInfo, f fwk.PodGroupSchedulingFunc) (*fwk.PodGroupPostFilterResult, *fwk.Status) {
	return w.o.inner.(fwk.PodGroupPostFilterPlugin).PodGroupPostFilter(ctx, state, pg, f)
}

type preScorePoint struct{ o *observed }

func (w preScorePoint) PreScore(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	start := time.Now()
	s := w.o.preScore.PreScore(ctx, state, p, nodes)
	w.o.once(state, pointPreScore, start, s)
	return s
}

type scorePoint struct{ o *observed }

func (w scorePoint) Score(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	c := w.o.perNodeClock(pointScore)
	if c == nil {
		return w.o.score.Score(ctx, state, p, nodeInfo)
	}
	start := monotonicNow()
	score, s := w.o.score.Score(ctx, state, p, nodeInfo)
	c.add(monotonicNow() - start)
	return score, s
}

// ScoreExtensions is nil exactly when the wrapped plugin's is.
func (w scorePoint) ScoreExtensions() fwk.ScoreExtensions {
	if w.o.score.ScoreExtensions() == nil {
		return nil
	}
	return normalizer(w)
}

type normalizer struct{ o *observed }

func (w normalizer) NormalizeScore(ctx context.Context, state fwk.CycleState, p *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	start := time.Now()
	s := w.o.score.ScoreExtensions().NormalizeScore(ctx, state, p, scores)
	w.o.once(state, pointNormalizeScore, start, s)
	return s
}

type reservePoint struct{ o *observed }

func (w reservePoint) Reserve(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := w.o.reserve.Reserve(ctx, state, p, nodeName)
	w.o.once(state, pointReserve, start, s)
	return s
}

func (w reservePoint) Unreserve(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) {
	start := time.Now()
	w.o.reserve.Unreserve(ctx, state, p, nodeName)
	w.o.once(state, pointUnreserve, start, nil)
}

type permitPoint struct{ o *observed }

func (w permitPoint) Permit(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	start := time.Now()
	s, wait := w.o.permit.Permit(ctx, state, p, nodeName)
	if a := w.o.timed(state, pointPermit, start); a != nil {
		a.addPluginStatus(w.o.index, pointPermit, s, wait)
	}
	return s, wait
}

type preBindPoint struct{ o *observed }

func (w preBindPoint) PreBindPreFlight(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	return w.o.preBind.PreBindPreFlight(ctx, state, p, nodeName)
}

func (w preBindPoint) PreBind(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := w.o.preBind.PreBind(ctx, state, p, nodeName)
	w.o.once(state, pointPreBind, start, s)
	return s
}

type bindPoint struct{ o *observed }

func (w bindPoint) Bind(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := w.o.bind.Bind(ctx, state, p, nodeName)
	w.o.once(state, pointBind, start, s)
	return s
}

type postBindPoint struct{ o *observed }

func (w postBindPoint) PostBind(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) {
	start := time.Now()
	w.o.postBind.PostBind(ctx, state, p, nodeName)
	w.o.once(state, pointPostBind, start, nil)
}

type signPoint struct{ o *observed }

func (w signPoint) SignPod(ctx context.Context, p *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return w.o.inner.(fwk.SignPlugin).SignPod(ctx, p)
}

type placementGeneratePoint struct{ o *observed }

func (w placementGeneratePoint) GeneratePlacements(ctx context.Context, state fwk.PodGroupCycleState, pg fwk.PodGroupInfo, parent *fwk.Placement) (*fwk.GeneratePlacementsResult, *fwk.Status) {
	return w.o.inner.(fwk.PlacementGeneratePlugin).GeneratePlacements(ctx, state, pg, parent)
}

type placementScorePoint struct{ o *observed }

func (w placementScorePoint) ScorePlacement(ctx context.Context, state fwk.PlacementCycleState, pg fwk.PodGroupInfo, placement *fwk.PodGroupAssignments) (int64, *fwk.Status) {
	return w.o.inner.(fwk.PlacementScorePlugin).ScorePlacement(ctx, state, pg, placement)
}

func (w placementScorePoint) PlacementScoreExtensions() fwk.PlacementScoreExtensions {
	return w.o.inner.(fwk.PlacementScorePlugin).PlacementScoreExtensions()
}

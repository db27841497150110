package observe

import (
	"context"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	schedscopeplugins "github.com/schedscope/schedscope/pkg/plugins"
	"github.com/schedscope/schedscope/pkg/version"
)

// observePlugins puts every plugin of f's recorded extension points inside
// an observing wrapper, in place.
//
// f must be the framework the scheduler built (kube-scheduler's own
// implementation): the framework keeps its plugins per extension point in
// unexported fields, after it has built every plugin from its registry and
// expanded multiPoint with the plugins themselves. Wrapping there, after the
// framework has checked which interfaces each plugin implements, leaves
// every such decision to the framework: which extension points a plugin
// serves, its queueing hints (EnqueueExtensions), its batching signature
// (SignPlugin), PreFilterExtensions and ScoreExtensions, and the pod group
// and placement points, whatever combination of interfaces a plugin has.
// Each wrapper implements exactly its extension point's interface and keeps
// the plugin's name, so metrics, logs and statuses name plugins as the
// configuration does.
func (r *Recorder) observePlugins(table *profileTable, f framework.Framework) error {
	fields, err := frameworkFields(f)
	if err != nil {
		return err
	}
	plugins := map[string]*observed{}
	of := func(p fwk.Plugin) *observed {
		o, ok := plugins[p.Name()]
		if !ok {
			o = &observed{table: table, index: table.add(p.Name())}
			plugins[p.Name()] = o
			if e, ok := pluginBehind(p).(schedscopeplugins.AttemptExplainer); ok {
				table.explainers = append(table.explainers, attemptExplainer{index: o.index, explainer: e})
			}
		}
		return o
	}
	for _, s := range observedSlices {
		s.wrap(fields.field(s.name), of)
	}
	return nil
}

// frameworkStruct is the framework's struct, its fields made settable.
type frameworkStruct struct{ v reflect.Value }

// frameworkFields checks that f is the framework implementation whose
// fields observePlugins replaces, with the types it expects.
func frameworkFields(f framework.Framework) (frameworkStruct, error) {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return frameworkStruct{}, fmt.Errorf("the framework is a %T, not kube-scheduler's framework implementation", f)
	}
	s := frameworkStruct{v.Elem()}
	for _, w := range observedSlices {
		field := s.v.FieldByName(w.name)
		if !field.IsValid() || field.Type() != w.typ {
			return frameworkStruct{}, fmt.Errorf("the framework %T has no field %s of type %s: this schedscope observes the framework of k8s.io/kubernetes %s", f, w.name, w.typ, version.Kubernetes())
		}
	}
	return s, nil
}

// field returns the named field, settable.
func (s frameworkStruct) field(name string) reflect.Value {
	f := s.v.FieldByName(name)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// pluginBehind returns the plugin p wraps, through any number of wrappers
// that embed the plugin they wrap as their first field, as the framework's
// own metric wrappers (instrumentedFilterPlugin, ...) do; p itself when it
// wraps none.
func pluginBehind(p fwk.Plugin) fwk.Plugin {
	plugin := reflect.TypeFor[fwk.Plugin]()
	for {
		v := reflect.ValueOf(p)
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct || v.NumField() == 0 {
			return p
		}
		first := v.Type().Field(0)
		if !first.Anonymous || first.Type.Kind() != reflect.Interface || !first.Type.Implements(plugin) || v.Field(0).IsNil() {
			return p
		}
		p = v.Field(0).Interface().(fwk.Plugin)
	}
}

// observedSlice is one extension point's plugin list in the framework.
type observedSlice struct {
	name string
	typ  reflect.Type
	wrap func(field reflect.Value, of func(fwk.Plugin) *observed)
}

// wrapSlice describes the plugin list name of element type P, whose plugins
// are wrapped by wrap.
func wrapSlice[P fwk.Plugin](name string, wrap func(P, *observed) P) observedSlice {
	return observedSlice{name: name, typ: reflect.TypeFor[[]P](), wrap: func(field reflect.Value, of func(fwk.Plugin) *observed) {
		plugins := field.Interface().([]P)
		wrapped := make([]P, len(plugins))
		for i, p := range plugins {
			wrapped[i] = wrap(p, of(p))
		}
		field.Set(reflect.ValueOf(wrapped))
	}}
}

// observedSlices are the extension points whose plugins are observed. The
// framework's other plugin lists (PreEnqueue, QueueSort, the pod group and
// placement points, the signing and enqueue extensions) are left as they
// are: they do not decide a pod's node within an attempt.
var observedSlices = []observedSlice{
	wrapSlice("preFilterPlugins", func(p fwk.PreFilterPlugin, o *observed) fwk.PreFilterPlugin { return preFilterPlugin{p, o} }),
	wrapSlice("filterPlugins", func(p fwk.FilterPlugin, o *observed) fwk.FilterPlugin {
		explainer, _ := pluginBehind(p).(schedscopeplugins.FilterExplainer)
		return filterPlugin{p, o, explainer}
	}),
	wrapSlice("postFilterPlugins", func(p fwk.PostFilterPlugin, o *observed) fwk.PostFilterPlugin { return postFilterPlugin{p, o} }),
	wrapSlice("preScorePlugins", func(p fwk.PreScorePlugin, o *observed) fwk.PreScorePlugin { return preScorePlugin{p, o} }),
	wrapSlice("scorePlugins", func(p fwk.ScorePlugin, o *observed) fwk.ScorePlugin { return scorePlugin{p, o} }),
	wrapSlice("reservePlugins", func(p fwk.ReservePlugin, o *observed) fwk.ReservePlugin { return reservePlugin{p, o} }),
	wrapSlice("permitPlugins", func(p fwk.PermitPlugin, o *observed) fwk.PermitPlugin { return permitPlugin{p, o} }),
	wrapSlice("preBindPlugins", func(p fwk.PreBindPlugin, o *observed) fwk.PreBindPlugin { return preBindPlugin{p, o} }),
	wrapSlice("bindPlugins", func(p fwk.BindPlugin, o *observed) fwk.BindPlugin { return bindPlugin{p, o} }),
	wrapSlice("postBindPlugins", func(p fwk.PostBindPlugin, o *observed) fwk.PostBindPlugin { return postBindPlugin{p, o} }),
}

// observed is what the wrappers of one plugin share: its number in the
// profile's table.
type observed struct {
	table *profileTable
	index int
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

// Each wrapper embeds the plugin as its extension point's interface, so it
// has the plugin's Name and the point's other methods (PreFilterExtensions,
// PreBindPreFlight) as they are, and overrides the calls it records.

type preFilterPlugin struct {
	fwk.PreFilterPlugin
	o *observed
}

func (w preFilterPlugin) PreFilter(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	start := time.Now()
	result, s := w.PreFilterPlugin.PreFilter(ctx, state, p, nodes)
	if a := w.o.timed(state, pointPreFilter, start); a != nil {
		a.addPreFilter(w.o.index, result, s)
	}
	return result, s
}

type filterPlugin struct {
	fwk.FilterPlugin
	o         *observed
	explainer schedscopeplugins.FilterExplainer // nil unless the plugin explains its rejections
}

func (w filterPlugin) Filter(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	c := w.o.perNodeClock(pointFilter)
	if c == nil {
		return w.explained(ctx, state, p, nodeInfo, w.FilterPlugin.Filter(ctx, state, p, nodeInfo))
	}
	start := monotonicNow()
	s := w.FilterPlugin.Filter(ctx, state, p, nodeInfo)
	c.add(monotonicNow() - start)
	return w.explained(ctx, state, p, nodeInfo, s)
}

// explained returns s, after asking the plugin to explain a rejection of a
// recorded attempt.
func (w filterPlugin) explained(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeInfo fwk.NodeInfo, s *fwk.Status) *fwk.Status {
	if w.explainer == nil || !s.IsRejected() {
		return s
	}
	if a := w.o.table.current.Load(); a != nil {
		a.addDetail(w.o.index, nodeInfo.Node().Name, w.explainer.ExplainFilter(ctx, state, p, nodeInfo, s))
	}
	return s
}

type postFilterPlugin struct {
	fwk.PostFilterPlugin
	o *observed
}

func (w postFilterPlugin) PostFilter(ctx context.Context, state fwk.CycleState, p *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	// PostFilter runs after the scheduling algorithm, so the Filter calls
	// preemption makes while simulating evictions are not timed as Filter.
	start := time.Now()
	result, s := w.PostFilterPlugin.PostFilter(ctx, state, p, m)
	w.o.once(state, pointPostFilter, start, s)
	return result, s
}

type preScorePlugin struct {
	fwk.PreScorePlugin
	o *observed
}

func (w preScorePlugin) PreScore(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	start := time.Now()
	s := w.PreScorePlugin.PreScore(ctx, state, p, nodes)
	w.o.once(state, pointPreScore, start, s)
	return s
}

type scorePlugin struct {
	fwk.ScorePlugin
	o *observed
}

func (w scorePlugin) Score(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	c := w.o.perNodeClock(pointScore)
	if c == nil {
		return w.ScorePlugin.Score(ctx, state, p, nodeInfo)
	}
	start := monotonicNow()
	score, s := w.ScorePlugin.Score(ctx, state, p, nodeInfo)
	c.add(monotonicNow() - start)
	return score, s
}

// ScoreExtensions is nil exactly when the wrapped plugin's is.
func (w scorePlugin) ScoreExtensions() fwk.ScoreExtensions {
	ext := w.ScorePlugin.ScoreExtensions()
	if ext == nil {
		return nil
	}
	return normalizer{ext, w.o}
}

type normalizer struct {
	fwk.ScoreExtensions
	o *observed
}

func (w normalizer) NormalizeScore(ctx context.Context, state fwk.CycleState, p *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	if normalizerKeepsRawScores {
		if a := attemptFrom(state); a != nil {
			a.keepRawScores(w.o.table.plugins[w.o.index], scores)
		}
	}
	start := time.Now()
	s := w.ScoreExtensions.NormalizeScore(ctx, state, p, scores)
	w.o.once(state, pointNormalizeScore, start, s)
	return s
}

type reservePlugin struct {
	fwk.ReservePlugin
	o *observed
}

func (w reservePlugin) Reserve(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := w.ReservePlugin.Reserve(ctx, state, p, nodeName)
	w.o.once(state, pointReserve, start, s)
	return s
}

func (w reservePlugin) Unreserve(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) {
	start := time.Now()
	w.ReservePlugin.Unreserve(ctx, state, p, nodeName)
	w.o.once(state, pointUnreserve, start, nil)
}

type permitPlugin struct {
	fwk.PermitPlugin
	o *observed
}

func (w permitPlugin) Permit(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	start := time.Now()
	s, wait := w.PermitPlugin.Permit(ctx, state, p, nodeName)
	if a := w.o.timed(state, pointPermit, start); a != nil {
		a.addPluginStatus(w.o.index, pointPermit, s, wait)
	}
	return s, wait
}

type preBindPlugin struct {
	fwk.PreBindPlugin
	o *observed
}

func (w preBindPlugin) PreBind(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := w.PreBindPlugin.PreBind(ctx, state, p, nodeName)
	w.o.once(state, pointPreBind, start, s)
	return s
}

type bindPlugin struct {
	fwk.BindPlugin
	o *observed
}

func (w bindPlugin) Bind(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := w.BindPlugin.Bind(ctx, state, p, nodeName)
	w.o.once(state, pointBind, start, s)
	return s
}

type postBindPlugin struct {
	fwk.PostBindPlugin
	o *observed
}

func (w postBindPlugin) PostBind(ctx context.Context, state fwk.CycleState, p *v1.Pod, nodeName string) {
	start := time.Now()
	w.PostBindPlugin.PostBind(ctx, state, p, nodeName)
	w.o.once(state, pointPostBind, start, nil)
}

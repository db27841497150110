package observe

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/build"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/nodeset"
)

// stateKey is where an attempt lives in the scheduler's CycleState.
const stateKey fwk.StateKey = "schedscope.io/attempt"

// attempt collects what one scheduling attempt did, while it runs; the
// build package turns it into the attempt's record. Fields written from
// parallel Filter and Score calls are atomic or per-slot; everything else
// is written by one goroutine at a time, in order (scheduling cycle, then
// binding cycle), and read by build after finish, which happens after the
// last write.
type attempt struct {
	table  *profileTable
	pod    *v1.Pod
	number int

	queued, started, cycleEnd, bindingStart, finished time.Time

	// Per plugin and point: calls and their time.
	clocks []pluginClock

	mu             sync.Mutex // guards the lists below (NormalizeScore runs in parallel)
	rawScores      map[string]fwk.NodeScoreList
	points         []record.PointRun
	pluginStatuses []build.PluginStatus
	preFilter      []record.PreFilterRun
	victims        []record.PodRef
	details        []record.PluginDetail
	detailsCut     int

	// arrays hold the record's largest slices once build has run.
	arrays *build.Arrays

	// Filter verdicts: verdicts[i] is the last status Filter returned for
	// the snapshot's node i, build.Passed for success, nil if it was not
	// filtered. Parallel Filter workers write distinct slots.
	nodes    *nodeset.Set
	verdicts []*fwk.Status

	filterStart     time.Time // zero until PreFilter succeeds, and again once Filter is recorded
	preFilterStatus *fwk.Status
	preFilterResult *fwk.PreFilterResult

	scores       []fwk.NodePluginScores
	scored       bool
	selectedNode string
	feasible     int

	result        record.Result
	message       string
	failedPoint   string
	nominatedNode string
	bindCall      time.Duration

	// shadows are the runs of the profile's shadows in this attempt.
	shadows []*shadowRun
}

func (a *attempt) Clone() fwk.StateData { return a }

// attemptFrom returns the attempt of a cycle, or nil outside one.
func attemptFrom(state fwk.CycleState) *attempt {
	if state == nil {
		return nil
	}
	v, err := state.Read(stateKey)
	if err != nil {
		return nil
	}
	a, _ := v.(*attempt)
	return a
}

var verdictPool = sync.Pool{New: func() any { return []*fwk.Status(nil) }}

func newAttempt(table *profileTable, pod *v1.Pod, number int, queued, started time.Time, nodes *nodeset.Set) *attempt {
	n := table.numPlugins() * int(numPoints)
	verdicts := verdictPool.Get().([]*fwk.Status)
	if cap(verdicts) < nodes.Len() {
		verdicts = make([]*fwk.Status, nodes.Len())
	}
	return &attempt{
		table:    table,
		pod:      pod,
		number:   number,
		queued:   queued,
		started:  started,
		clocks:   make([]pluginClock, n),
		nodes:    nodes,
		verdicts: verdicts[:nodes.Len()],
	}
}

// useNodes makes set the nodes whose verdicts the attempt records, with a
// slot each; before any Filter call, from the goroutine that runs the
// scheduling cycle.
func (a *attempt) useNodes(set *nodeset.Set) {
	if set == a.nodes {
		return
	}
	a.nodes = set
	if cap(a.verdicts) < set.Len() {
		a.verdicts = make([]*fwk.Status, set.Len())
	}
	a.verdicts = a.verdicts[:set.Len()]
	clear(a.verdicts)
}

// release returns the attempt's reusable buffers, its record's arrays
// among them: the record must not be read after.
func (a *attempt) release() {
	a.releaseShadows()
	if a.arrays != nil {
		a.arrays.Release()
		a.arrays = nil
	}
	if a.verdicts == nil {
		return
	}
	clear(a.verdicts)
	verdictPool.Put(a.verdicts) //nolint:staticcheck // a slice header is small enough
	a.verdicts = nil
}

// Per-node calls (Filter and Score) are timed for the first exactCalls
// calls of a plugin in an attempt and for every sampleEvery-th call after;
// reading the clock twice per node and plugin would cost more than the
// rest of the recording. The total is scaled to all calls.
const (
	exactCalls  = 16
	sampleEvery = 8
)

// pluginClock counts one plugin's calls at one point and their time.
type pluginClock struct {
	calls atomic.Int64
	timed atomic.Int64
	nanos atomic.Int64
}

// clock returns the clock of a plugin at a point, or nil for a plugin
// registered after the attempt started.
func (a *attempt) clock(plugin int, p point) *pluginClock {
	i := plugin*int(numPoints) + int(p)
	if i >= len(a.clocks) {
		return nil
	}
	return &a.clocks[i]
}

// sample counts a per-node call and tells whether to time it.
func (c *pluginClock) sample() bool {
	n := c.calls.Add(1)
	return n <= exactCalls || n%sampleEvery == 0
}

// add adds the time of a timed call.
func (c *pluginClock) add(d time.Duration) {
	c.nanos.Add(int64(d))
	c.timed.Add(1)
}

// total is the time of all calls, scaled up from the timed ones.
func (c *pluginClock) total() time.Duration {
	timed := c.timed.Load()
	if timed == 0 {
		return 0
	}
	return time.Duration(c.nanos.Load() * c.calls.Load() / timed)
}

// addPluginTime counts one timed call of a plugin at a point.
func (a *attempt) addPluginTime(plugin int, p point, d time.Duration) {
	if c := a.clock(plugin, p); c != nil {
		c.calls.Add(1)
		c.add(d)
	}
}

// addPluginStatus records what a plugin returned at a point called once
// per attempt, and the wait a Permit plugin asked for.
func (a *attempt) addPluginStatus(plugin int, p point, s *fwk.Status, wait time.Duration) {
	a.mu.Lock()
	a.pluginStatuses = append(a.pluginStatuses, build.PluginStatus{Plugin: a.table.plugins[plugin], Point: p.String(), Status: s, Wait: wait})
	a.mu.Unlock()
}

func (a *attempt) addPreFilter(plugin int, result *fwk.PreFilterResult, s *fwk.Status) {
	run := record.PreFilterRun{Plugin: a.table.plugins[plugin], Code: s.Code().String(), Reasons: build.Reasons(s)}
	if !result.AllNodes() {
		run.NodeNames = sets.List(result.NodeNames)
	}
	a.mu.Lock()
	a.preFilter = append(a.preFilter, run)
	a.mu.Unlock()
}

// addPoint records a run of an extension point and returns its duration.
func (a *attempt) addPoint(p point, start time.Time, s *fwk.Status) time.Duration {
	run := record.PointRun{Point: p.String(), Start: start, Duration: time.Since(start), Code: s.Code().String()}
	if !s.IsSuccess() {
		run.Plugin = s.Plugin()
		run.Reasons = build.Reasons(s)
	}
	a.mu.Lock()
	a.points = append(a.points, run)
	a.mu.Unlock()
	return run.Duration
}

// endFilter records the Filter phase, once, when the scheduler moves past it.
func (a *attempt) endFilter(feasible bool) {
	if a.filterStart.IsZero() || !a.preFilterStatus.IsSuccess() {
		return
	}
	s := fwk.NewStatus(fwk.Unschedulable)
	if feasible {
		s = nil
	}
	a.addPoint(pointFilter, a.filterStart, s)
	a.filterStart = time.Time{}
}

// addVerdict records the Filter verdict of one node of the snapshot, in
// its own slot: it is called from the framework's parallel Filter workers.
// A later verdict for the same node (the nominated node, filtered again
// with all nodes) replaces the earlier.
func (a *attempt) addVerdict(node string, s *fwk.Status) {
	i, ok := a.nodes.Find(node)
	if !ok || int(i) >= len(a.verdicts) {
		return
	}
	if s.IsSuccess() {
		s = build.Passed
	}
	a.verdicts[i] = s
}

func (a *attempt) addVictim(p *v1.Pod) {
	a.mu.Lock()
	a.victims = append(a.victims, record.PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)})
	a.mu.Unlock()
}

// keepRawScores keeps the scores plugin gave the scored nodes before its
// NormalizeScore, in the framework's order of the scored nodes; only where
// the framework does not keep them itself (normalizerKeepsRawScores).
func (a *attempt) keepRawScores(plugin string, scores fwk.NodeScoreList) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rawScores == nil {
		a.rawScores = map[string]fwk.NodeScoreList{}
	}
	a.rawScores[plugin] = slices.Clone(scores)
}

// normalizerKeepsRawScores tells whether the NormalizeScore wrapper keeps
// the raw scores it is given: where the framework does not keep them.
const normalizerKeepsRawScores = !build.FrameworkKeepsRawScores

// build turns the attempt into its record, in arrays that release gives
// back.
func (a *attempt) build() *record.Attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.arrays == nil {
		a.arrays = build.NewArrays()
	}
	rec := build.Record(&build.Attempt{
		Pod:             a.pod,
		Profile:         a.table.name,
		Number:          a.number,
		Queued:          a.queued,
		Started:         a.started,
		CycleEnd:        a.cycleEnd,
		BindingStart:    a.bindingStart,
		Finished:        a.finished,
		BindCall:        a.bindCall,
		Result:          a.result,
		Message:         a.message,
		FailedPoint:     a.failedPoint,
		SelectedNode:    a.selectedNode,
		NominatedNode:   a.nominatedNode,
		Victims:         a.victims,
		Points:          a.points,
		PreFilter:       a.preFilter,
		Details:         a.details,
		DetailsCut:      a.detailsCut,
		PluginRuns:      a.pluginRuns(),
		Statuses:        a.pluginStatuses,
		Nodes:           a.nodes,
		Verdicts:        a.verdicts,
		PreFilterStatus: a.preFilterStatus,
		PreFilterResult: a.preFilterResult,
		Feasible:        a.feasible,
		ScorePlugins:    a.table.scorePlugins,
		Scores:          a.scores,
		Scored:          a.scored,
		KeptRawScores:   a.rawScores,
	}, a.arrays)
	rec.Shadows = a.shadowRecords()
	return rec
}

// pluginRuns reads the plugins' clocks: the calls and time of each plugin
// that was called, point by point in the order the framework runs them.
func (a *attempt) pluginRuns() []record.PluginRun {
	var runs []record.PluginRun
	plugins := len(a.clocks) / int(numPoints)
	for p := range numPoints {
		for plugin := range plugins {
			c := &a.clocks[plugin*int(numPoints)+int(p)]
			calls := c.calls.Load()
			if calls == 0 {
				continue
			}
			runs = append(runs, record.PluginRun{
				Plugin:   a.table.plugins[plugin],
				Point:    p.String(),
				Duration: c.total(),
				Calls:    calls,
				Timed:    c.timed.Load(),
			})
		}
	}
	return runs
}

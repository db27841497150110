package observe

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
)

// stateKey is where an attempt lives in the scheduler's CycleState.
const stateKey fwk.StateKey = "schedscope.io/attempt"

// attempt collects what one scheduling attempt did, while it runs.
// Fields written from parallel Filter and Score calls are atomic or
// per-slot; everything else is written by one goroutine at a time, in
// order (scheduling cycle, then binding cycle), and read by build after
// finish, which happens after the last write.
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
	pluginStatuses []pluginStatus
	preFilter      []record.PreFilterRun
	victims        []record.PodRef
	details        []record.PluginDetail
	detailsCut     int

	// arrays hold the record's largest slices once build has run.
	arrays *recordArrays

	// Filter verdicts: verdicts[i] is the last status Filter returned for
	// the snapshot's node i, passed for success, nil if it was not
	// filtered. Parallel Filter workers write distinct slots.
	nodes    *nodeSet
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
}

// passed is the verdict slot of a node every filter accepted.
var passed = fwk.NewStatus(fwk.Success)

type pluginStatus struct {
	plugin int
	point  point
	status *fwk.Status
	wait   time.Duration
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

func newAttempt(table *profileTable, pod *v1.Pod, number int, queued, started time.Time, nodes *nodeSet) *attempt {
	n := table.numPlugins() * int(numPoints)
	verdicts := verdictPool.Get().([]*fwk.Status)
	if cap(verdicts) < len(nodes.names) {
		verdicts = make([]*fwk.Status, len(nodes.names))
	}
	return &attempt{
		table:    table,
		pod:      pod,
		number:   number,
		queued:   queued,
		started:  started,
		clocks:   make([]pluginClock, n),
		nodes:    nodes,
		verdicts: verdicts[:len(nodes.names)],
	}
}

// release returns the attempt's reusable buffers, its record's arrays
// among them: the record must not be read after.
func (a *attempt) release() {
	if a.arrays != nil {
		a.arrays.release()
		a.arrays = nil
	}
	if a.verdicts == nil {
		return
	}
	clear(a.verdicts)
	verdictPool.Put(a.verdicts) //nolint:staticcheck // a slice header is small enough
	a.verdicts = nil
}

// recordArrays are the largest slices of a record: its scored nodes, their
// values and the names of its Filter groups, most of what a 5000-node
// attempt's record allocates. They are reused from record to record, as a
// record's readers (the Sink, the Tracer, OnRecord) do not keep it past
// their call.
type recordArrays struct {
	scores []record.NodeScore
	values []int64
	names  []string
}

var arraysPool = sync.Pool{New: func() any { return &recordArrays{} }}

// resize returns s with length n, zeroed, reusing its array when it has room.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// recordArrays returns the attempt's record arrays, taken from the pool
// the first time.
func (a *attempt) recordArrays() *recordArrays {
	if a.arrays == nil {
		a.arrays = arraysPool.Get().(*recordArrays)
	}
	return a.arrays
}

func (r *recordArrays) release() {
	clear(r.scores)
	clear(r.names)
	arraysPool.Put(r)
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
	a.pluginStatuses = append(a.pluginStatuses, pluginStatus{plugin: plugin, point: p, status: s, wait: wait})
	a.mu.Unlock()
}

func (a *attempt) addPreFilter(plugin int, result *fwk.PreFilterResult, s *fwk.Status) {
	run := record.PreFilterRun{Plugin: a.table.plugins[plugin], Code: s.Code().String(), Reasons: reasons(s)}
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
		run.Reasons = reasons(s)
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
	i, ok := a.nodes.find(node)
	if !ok || int(i) >= len(a.verdicts) {
		return
	}
	if s.IsSuccess() {
		s = passed
	}
	a.verdicts[i] = s
}

func (a *attempt) addVictim(p *v1.Pod) {
	a.mu.Lock()
	a.victims = append(a.victims, record.PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)})
	a.mu.Unlock()
}

// build turns the attempt into its record.
func (a *attempt) build() *record.Attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := &record.Attempt{
		Pod:           record.PodRef{Namespace: a.pod.Namespace, Name: a.pod.Name, UID: string(a.pod.UID)},
		Profile:       a.table.name,
		Attempt:       a.number,
		Result:        a.result,
		Message:       record.CutText(a.message, record.MaxTextBytes),
		FailedPoint:   a.failedPoint,
		SelectedNode:  a.selectedNode,
		NominatedNode: a.nominatedNode,
		Victims:       a.victims,
		Points:        a.points,
		PreFilter:     a.preFilter,
		Details:       a.details,
		DetailsCut:    a.detailsCut,
		Timing: record.Timing{
			Queued:    a.queued,
			Started:   a.started,
			Finished:  a.finished,
			QueueWait: a.started.Sub(a.queued),
			BindCall:  a.bindCall,
		},
	}
	if !a.cycleEnd.IsZero() {
		rec.Timing.SchedulingCycle = a.cycleEnd.Sub(a.started)
	}
	if !a.bindingStart.IsZero() {
		rec.Timing.BindingCycle = a.finished.Sub(a.bindingStart)
	}
	if a.queued.IsZero() {
		rec.Timing.QueueWait = 0
	}
	rec.Plugins = a.pluginRuns()
	rec.Filter, rec.Nodes = a.filterVerdicts()
	rec.Nodes.Feasible = a.feasible
	rec.Scores = a.scoreBreakdown()
	return rec
}

func (a *attempt) pluginRuns() []record.PluginRun {
	var runs []record.PluginRun
	index := map[[2]int]int{}
	// Point by point, in the order the framework runs them.
	for n := range a.clocks {
		plugins := len(a.clocks) / int(numPoints)
		plugin, p := n%plugins, point(n/plugins)
		c := &a.clocks[plugin*int(numPoints)+int(p)]
		calls := c.calls.Load()
		if calls == 0 {
			continue
		}
		index[[2]int{plugin, int(p)}] = len(runs)
		runs = append(runs, record.PluginRun{
			Plugin:   a.table.plugins[plugin],
			Point:    p.String(),
			Duration: c.total(),
			Calls:    calls,
			Timed:    c.timed.Load(),
		})
	}
	for _, ps := range a.pluginStatuses {
		j, ok := index[[2]int{ps.plugin, int(ps.point)}]
		if !ok {
			continue
		}
		if ps.point != pointUnreserve && ps.point != pointPostBind {
			runs[j].Code = ps.status.Code().String()
			runs[j].Reasons = reasons(ps.status)
		}
		runs[j].PermitWait = ps.wait
	}
	return runs
}

// filterVerdicts groups every node of the snapshot by its Filter verdict,
// each group's nodes sorted by name. It runs for every attempt on the
// background worker, which shares the machine with the scheduler, so it
// walks the snapshot's nodes in their cached name order instead of
// sorting, builds no string per node, and puts the names of every group
// in one array of the exact size.
func (a *attempt) filterVerdicts() ([]record.VerdictGroup, record.NodeCounts) {
	nodes := a.nodes
	counts := record.NodeCounts{Total: len(nodes.names)}
	sc := getScratch(len(nodes.names))
	defer putScratch(sc)
	// groupOf[i] is 1 + the group of the snapshot's node i, 0 if it was not
	// evaluated.
	groupOf := sc.groupOf
	g := verdictGroups{passed: -1, last: -1}
	for i, s := range a.verdicts {
		if s == nil {
			continue
		}
		if s == passed {
			s = nil
		}
		counts.Evaluated++
		j := g.of(s)
		g.list[j].count++
		groupOf[i] = int32(j) + 1
	}

	// Groups are output in the order of their first node by name, then
	// ordered by rank.
	out := make([]record.VerdictGroup, 0, len(g.list)+2)
	arrays := a.recordArrays()
	arrays.names = resize(arrays.names, counts.Evaluated)
	names := arrays.names
	notEvaluated := a.notEvaluatedReason(counts.Evaluated)
	narrowed := notEvaluated == record.NotEvaluatedEnoughFeasible && a.preFilterResult != nil && !a.preFilterResult.AllNodes()
	notEvaluatedGroup, outsidePreFilterResult := -1, -1
	for _, i := range nodes.sorted {
		j := groupOf[i]
		if j == 0 {
			// Not evaluated: counted, not named.
			at, reason := &notEvaluatedGroup, notEvaluated
			if narrowed && !a.preFilterResult.NodeNames.Has(nodes.names[i]) {
				at, reason = &outsidePreFilterResult, record.NotEvaluatedPreFilterResult
			}
			if *at < 0 {
				*at = len(out)
				out = append(out, record.VerdictGroup{Verdict: record.VerdictNotEvaluated, NotEvaluatedReason: reason})
			}
			out[*at].Count++
			continue
		}
		grp := &g.list[j-1]
		if grp.out < 0 {
			grp.out = len(out)
			out = append(out, grp.record(names[:0:grp.count]))
			names = names[grp.count:]
		}
		o := &out[grp.out]
		o.Count++
		o.Nodes = append(o.Nodes, nodes.names[i])
	}
	slices.SortStableFunc(out, func(x, y record.VerdictGroup) int { return cmp.Compare(x.Rank(), y.Rank()) })
	return out, counts
}

// verdictGroups are the distinct Filter verdicts of an attempt: passed, and
// each distinct rejection.
type verdictGroups struct {
	list     []verdictGroup
	passed   int // -1 until a node passes
	last     int // the last rejection found, -1 until one is
	rejected map[verdictKey]int
}

type verdictGroup struct {
	status *fwk.Status // nil: passed
	count  int
	out    int // place in the output, -1 until the group's first node by name
}

// verdictKey identifies a group of identical Filter rejections.
type verdictKey struct {
	plugin, reasons string
	code            fwk.Code
}

// of returns the group of a verdict. Rejections come from the plugins as a
// new status per node, mostly with the reasons of the rejection before, so
// that one is compared first.
func (g *verdictGroups) of(s *fwk.Status) int {
	if s == nil {
		if g.passed < 0 {
			g.passed = g.add(nil)
		}
		return g.passed
	}
	if g.last >= 0 && sameRejection(g.list[g.last].status, s) {
		return g.last
	}
	key := verdictKey{plugin: s.Plugin(), code: s.Code()}
	if r := s.Reasons(); len(r) == 1 {
		key.reasons = r[0]
	} else {
		key.reasons = strings.Join(r, "\x00")
	}
	j, ok := g.rejected[key]
	if !ok {
		if g.rejected == nil {
			g.rejected = map[verdictKey]int{}
		}
		j = g.add(s)
		g.rejected[key] = j
	}
	g.last = j
	return j
}

func (g *verdictGroups) add(s *fwk.Status) int {
	g.list = append(g.list, verdictGroup{status: s, out: -1})
	return len(g.list) - 1
}

// sameRejection reports whether two rejections belong in one group.
func sameRejection(x, y *fwk.Status) bool {
	return x == y || (x.Code() == y.Code() && x.Plugin() == y.Plugin() && slices.Equal(x.Reasons(), y.Reasons()))
}

// record returns the group's record, which lists its nodes in names.
func (g *verdictGroup) record(names []string) record.VerdictGroup {
	if g.status == nil {
		return record.VerdictGroup{Verdict: record.VerdictPassed, Nodes: names}
	}
	s := g.status
	return record.VerdictGroup{Verdict: record.VerdictRejected, Plugin: s.Plugin(), Code: s.Code().String(), Reasons: reasons(s), Nodes: names}
}

// buildScratch holds build's temporary arrays, reused from attempt to
// attempt.
type buildScratch struct {
	groupOf []int32    // by node of the snapshot, zero between uses
	order   []scoreKey // by scored node
}

var scratchPool = sync.Pool{New: func() any { return &buildScratch{} }}

// getScratch returns scratch whose groupOf has room for nodes nodes.
func getScratch(nodes int) *buildScratch {
	sc := scratchPool.Get().(*buildScratch)
	if cap(sc.groupOf) < nodes {
		sc.groupOf = make([]int32, nodes)
	}
	sc.groupOf = sc.groupOf[:nodes]
	return sc
}

func putScratch(sc *buildScratch) {
	clear(sc.groupOf)
	scratchPool.Put(sc)
}

// notEvaluatedReason says why the nodes without a verdict were not
// filtered, evaluated nodes having one.
func (a *attempt) notEvaluatedReason(evaluated int) string {
	switch {
	case a.preFilterStatus != nil && !a.preFilterStatus.IsSuccess():
		return record.NotEvaluatedPreFilterRejected
	case a.pod.Status.NominatedNodeName != "" && a.feasible == 1 && evaluated == 1:
		return record.NotEvaluatedNominatedNodeFit
	}
	return record.NotEvaluatedEnoughFeasible
}

func (a *attempt) scoreBreakdown() *record.Scores {
	if !a.scored {
		if a.result == record.ResultScheduled && a.feasible == 1 {
			return &record.Scores{SkippedReason: record.ScoringSkippedSingleNode}
		}
		return nil
	}
	plugins := a.table.scorePlugins
	index := pluginIndex{byName: make(map[string]int, len(plugins))}
	for i, p := range plugins {
		index.byName[p.Name] = i
	}
	// Highest total first, then by name; node names are unique, so the
	// order is total. The small keys are sorted, not the nodes' scores, and
	// names are compared by their place in the snapshot's name order when
	// every scored node is in the snapshot.
	sc := getScratch(0)
	defer putScratch(sc)
	order := sc.order[:0]
	ranked := true
	for k, ns := range a.scores {
		key := scoreKey{total: ns.TotalScore, at: int32(k)}
		if i, ok := a.nodes.find(ns.Name); ok {
			key.rank = a.nodes.rank[i]
		} else {
			ranked = false
		}
		order = append(order, key)
	}
	sc.order = order
	slices.SortFunc(order, func(x, y scoreKey) int {
		if c := cmp.Compare(y.total, x.total); c != 0 {
			return c
		}
		if ranked {
			return cmp.Compare(x.rank, y.rank)
		}
		return strings.Compare(a.scores[x.at].Name, a.scores[y.at].Name)
	})
	// One backing array for every node's raw, normalized and weighted
	// scores: a 5000-node attempt scores hundreds of nodes.
	p := len(plugins)
	arrays := a.recordArrays()
	arrays.scores = resize(arrays.scores, len(a.scores))
	arrays.values = resize(arrays.values, 3*p*len(a.scores))
	out := &record.Scores{Plugins: plugins, Nodes: arrays.scores}
	values := arrays.values
	for k, key := range order {
		ns := &a.scores[key.at]
		v := values[3*p*k : 3*p*(k+1)]
		node := &out.Nodes[k]
		*node = record.NodeScore{
			Node:       ns.Name,
			Raw:        v[:p:p],
			Normalized: v[p : 2*p : 2*p],
			Weighted:   v[2*p : 3*p : 3*p],
			Total:      ns.TotalScore,
		}
		raw := nodeRawScores(ns)
		for j, s := range raw {
			if i, ok := index.of(&index.raw, j, s.Name); ok {
				node.Raw[i] = s.Score
			}
		}
		for j, s := range ns.Scores {
			i, ok := index.of(&index.weighted, j, s.Name)
			if !ok {
				node.Extenders += s.Score
				continue
			}
			node.Weighted[i] = s.Score
			if w := plugins[i].Weight; w != 0 {
				node.Normalized[i] = s.Score / w
			}
		}
		if normalizerKeepsRawScores {
			a.rawScoresKept(node, plugins, int(key.at))
		}
	}
	return out
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

// rawScoresKept sets node's raw scores, the at-th scored node's, from the
// scores keepRawScores kept; a plugin without NormalizeScore scores as it
// is normalized.
func (a *attempt) rawScoresKept(node *record.NodeScore, plugins []record.ScorePlugin, at int) {
	for i, p := range plugins {
		node.Raw[i] = node.Normalized[i]
		if kept, ok := a.rawScores[p.Name]; ok && at < len(kept) && kept[at].Name == node.Node {
			node.Raw[i] = kept[at].Score
		}
	}
}

// scoreKey orders the scored nodes: rank is the node's place in the
// snapshot's name order, at its place in the framework's list.
type scoreKey struct {
	total    int64
	rank, at int32
}

// pluginIndex finds the score plugin of each of a node's scores. The
// framework lists every node's scores in the same plugin order, so the
// position of the name seen at each place is remembered, and the name
// looked up only when it differs.
type pluginIndex struct {
	byName        map[string]int // score plugin name to position
	raw, weighted []seenPlugin   // by place in a node's RawScores and Scores
}

type seenPlugin struct {
	name string
	at   int // -1: not a score plugin (an extender)
}

func (x *pluginIndex) of(seen *[]seenPlugin, place int, name string) (int, bool) {
	if place < len(*seen) && (*seen)[place].name == name {
		at := (*seen)[place].at
		return at, at >= 0
	}
	at, ok := x.byName[name]
	if !ok {
		at = -1
	}
	for len(*seen) <= place {
		*seen = append(*seen, seenPlugin{at: -1})
	}
	(*seen)[place] = seenPlugin{name: name, at: at}
	return at, ok
}

// reasons returns a status's reasons as a record keeps them, bounded by
// record.CutReasons; a nil status (success) has none. The status itself is
// not changed: it is what the scheduler sees.
func reasons(s *fwk.Status) []string {
	if s == nil {
		return nil
	}
	return record.CutReasons(s.Reasons())
}

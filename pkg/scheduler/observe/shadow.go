package observe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"

	"github.com/schedscope/schedscope/pkg/record"
)

// Shadow names a shadow profile and the live profile it shadows, each by
// its schedulerName.
type Shadow struct {
	Name string
	Live string
}

// CheckShadows reports every shadow that cannot run beside the profiles:
// one whose profile or live profile is not among profiles, one that
// shadows itself, one declared twice, and one whose live profile is itself
// a shadow. Each error names the shadow profile.
func CheckShadows(shadows []Shadow, profiles []string) []error {
	var errs []error
	isShadow := map[string]bool{}
	for _, s := range shadows {
		isShadow[s.Name] = true
	}
	seen := map[string]bool{}
	for _, s := range shadows {
		switch {
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("shadow profile %q: declared more than once", s.Name))
		case s.Name == s.Live:
			errs = append(errs, fmt.Errorf("shadow profile %q: shadows itself", s.Name))
		case !slices.Contains(profiles, s.Name):
			errs = append(errs, fmt.Errorf("shadow profile %q: no profile has that schedulerName", s.Name))
		case !slices.Contains(profiles, s.Live):
			errs = append(errs, fmt.Errorf("shadow profile %q: its live profile %q is not a profile", s.Name, s.Live))
		case isShadow[s.Live]:
			errs = append(errs, fmt.Errorf("shadow profile %q: its live profile %q is itself a shadow", s.Name, s.Live))
		}
		seen[s.Name] = true
	}
	return errs
}

// shadow is a shadow profile as it runs: its observed framework, asked
// about the sampled attempts of its live profile within their scheduling
// cycle, on the same snapshot, and never about a pod of its own.
type shadow struct {
	name        string
	framework   *observedFramework
	postFilters []shadowPostFilter
}

// shadowPostFilter is a PostFilter plugin of a shadow, with the preemption
// it dry-runs when it is DefaultPreemption.
type shadowPostFilter struct {
	name       string
	preemption *defaultpreemption.DefaultPreemption
}

// shadowRun is a shadow's run in a live attempt: its own attempt, and the
// comparison with the live one.
type shadowRun struct {
	attempt *attempt
	run     record.ShadowRun
}

// takeShadows takes the shadow profiles out of sched's profiles, so that
// the scheduler schedules no pod with them, and attaches each to its live
// profile's table. The profiles are observed already.
func (r *Recorder) takeShadows(sched *scheduler.Scheduler) error {
	for _, s := range r.opts.Shadows {
		f, ok := sched.Profiles[s.Name].(*observedFramework)
		live := sched.Profiles[s.Live]
		if !ok || live == nil {
			return fmt.Errorf("shadow profile %q: the scheduler has no observed profile %q or %q", s.Name, s.Name, s.Live)
		}
		if f.SnapshotSharedLister() != live.SnapshotSharedLister() {
			return fmt.Errorf("shadow profile %q: it does not read the snapshot of its live profile %q", s.Name, s.Live)
		}
		postFilters, err := postFiltersOf(f.Framework)
		if err != nil {
			return fmt.Errorf("shadow profile %q: %w", s.Name, err)
		}
		table := r.profileTable(s.Live)
		table.shadows = append(table.shadows, &shadow{name: s.Name, framework: f, postFilters: postFilters})
		delete(sched.Profiles, s.Name)
	}
	return nil
}

// closeShadows closes the shadows' frameworks, which close their plugins
// that are io.Closers.
func (r *Recorder) closeShadows() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.profiles {
		for _, s := range t.shadows {
			if err := s.framework.Close(); err != nil {
				klog.Background().Error(err, "Closing a shadow profile's plugins", "shadow", s.name)
			}
		}
	}
}

// postFiltersOf returns f's PostFilter plugins, in order.
func postFiltersOf(f framework.Framework) ([]shadowPostFilter, error) {
	fields, err := frameworkFields(f)
	if err != nil {
		return nil, err
	}
	var out []shadowPostFilter
	for _, p := range fields.field("postFilterPlugins").Interface().([]fwk.PostFilterPlugin) {
		dp, _ := pluginBehind(p).(*defaultpreemption.DefaultPreemption)
		out = append(out, shadowPostFilter{name: p.Name(), preemption: dp})
	}
	return out, nil
}

// sampleShadows tells whether the shadows run in the table's next attempt:
// every ShadowSampleEvery-th attempt of the live profile, the first
// included.
func (r *Recorder) sampleShadows(t *profileTable) bool {
	if len(t.shadows) == 0 {
		return false
	}
	every := max(r.opts.ShadowSampleEvery, 1)
	return (t.shadowCount.Add(1)-1)%uint64(every) == 0
}

// runShadows runs the live profile's shadows for a, whose scheduling
// algorithm has just returned result and err, before anything else in
// the scheduling cycle: the scheduler updates its snapshot only at the
// start of a cycle, on this goroutine, so the shadows see the snapshot the
// live algorithm saw. A run during which the snapshot changed anyway is
// not compared.
func (r *Recorder) runShadows(ctx context.Context, live framework.Framework, a *attempt, result scheduler.ScheduleResult, err error) {
	if !r.sampleShadows(a.table) {
		return
	}
	lister := live.SnapshotSharedLister()
	if lister == nil {
		return
	}
	nodes, listErr := lister.NodeInfos().List()
	if listErr != nil {
		return
	}
	before := fingerprintOf(nodes)
	var fitErr *framework.FitError
	liveFit := err == nil && result.SuggestedHost != ""
	for _, s := range a.table.shadows {
		sr := s.run(ctx, r, a, nodes, liveFit, result.SuggestedHost)
		after, _ := lister.NodeInfos().List()
		switch {
		case fingerprintOf(after) != before:
			sr.notCompared(record.NotComparedSnapshotChanged)
		case err != nil && !errors.As(err, &fitErr):
			sr.notCompared(record.NotComparedLiveError)
		}
		a.shadows = append(a.shadows, sr)
	}
}

// fingerprint identifies a snapshot's node list and the generation of
// each of its nodes.
type fingerprint struct {
	first       fwk.NodeInfo
	nodes       int
	generations int64
}

func fingerprintOf(nodes []fwk.NodeInfo) fingerprint {
	fp := fingerprint{nodes: len(nodes)}
	if len(nodes) > 0 {
		fp.first = nodes[0]
	}
	for _, n := range nodes {
		fp.generations += n.GetGeneration()
	}
	return fp
}

func (sr *shadowRun) notCompared(reason string) {
	sr.run.Outcome = record.ShadowNotCompared
	sr.run.NotComparedReason = reason
	sr.run.LiveNodeRank, sr.run.LiveNodeScore, sr.run.ShadowNodeLiveScore = 0, nil, nil
}

// run asks the shadow where live's pod would go: PreFilter, Filter on the
// nodes the live attempt examined (all of nodes when it found none), a
// dry run of its PostFilter when none fits, PreScore and Score, and the
// best node, ties going to the live attempt's node (the scheduler breaks
// ties at random). Plugins and attempt explainers are observed as in a
// live attempt, in the shadow's own attempt and CycleState.
func (s *shadow) run(ctx context.Context, r *Recorder, live *attempt, nodes []fwk.NodeInfo, liveFit bool, liveNode string) *shadowRun {
	pod := live.pod
	a := newAttempt(s.framework.table, pod, live.number, live.queued, time.Now(), r.nodeSetOf(nodes))
	sr := &shadowRun{attempt: a, run: record.ShadowRun{Profile: s.name}}
	state := framework.NewCycleState()
	state.Write(stateKey, a)
	a.table.current.Store(a)
	defer a.table.current.Store(nil)

	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	feasible, scores, err := s.schedule(ctx, state, pod, &diagnosis, live.candidates(nodes, liveFit, liveNode))
	a.table.current.Store(nil)
	a.explainAttempt(ctx, state)
	a.cycleEnd = time.Now()
	switch {
	case err != nil:
		a.result, a.message = record.ResultError, err.Error()
		a.failedPoint = failedPoint(a)
	case len(feasible) == 0:
		a.result = record.ResultUnschedulable
		a.message = (&framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diagnosis}).Error()
		a.failedPoint = failedPoint(a)
		sr.run.PostFilter = s.postFilter(ctx, state, pod, nodes, diagnosis.NodeToStatus)
	default:
		a.result = record.ResultScheduled
		a.selectedNode = selectNode(feasible, scores, liveNode)
	}
	a.feasible = len(feasible)
	a.finished = time.Now()
	sr.compare(live, liveFit, liveNode, scores)
	return sr
}

// candidates are the nodes a shadow filters for a: those the live
// attempt rejected and those it kept as feasible when it found a node (a
// live attempt may stop filtering once it has found enough), all of nodes
// when it found none or when its verdicts are not of nodes' snapshot.
func (a *attempt) candidates(nodes []fwk.NodeInfo, liveFit bool, liveNode string) []fwk.NodeInfo {
	if !liveFit || !a.nodes.BuiltFrom(nodes) {
		return nodes
	}
	feasible := sets.New(liveNode)
	for _, s := range a.scores {
		feasible.Insert(s.Name)
	}
	var out []fwk.NodeInfo
	for _, n := range nodes {
		name := n.Node().Name
		if feasible.Has(name) {
			out = append(out, n)
			continue
		}
		if i, ok := a.nodes.Find(name); ok && int(i) < len(a.verdicts) {
			if v := a.verdicts[i]; v != nil && v.IsRejected() {
				out = append(out, n)
			}
		}
	}
	return out
}

// schedule runs the shadow's algorithm on candidates: the feasible nodes
// and, when there are several, their scores. Why nodes do not fit goes to
// diagnosis, as the scheduler's algorithm puts it there.
func (s *shadow) schedule(ctx context.Context, state fwk.CycleState, pod *v1.Pod, diagnosis *framework.Diagnosis, candidates []fwk.NodeInfo) ([]fwk.NodeInfo, []fwk.NodePluginScores, error) {
	f := s.framework
	preRes, status, unresolved := f.RunPreFilterPlugins(ctx, state, pod)
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return nil, nil, status.AsError()
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(status)
		diagnosis.PreFilterMsg = status.Message()
		return nil, nil, nil
	}
	if !preRes.AllNodes() {
		candidates = slices.DeleteFunc(slices.Clone(candidates), func(n fwk.NodeInfo) bool { return !preRes.NodeNames.Has(n.Node().Name) })
		diagnosis.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unresolved))))
	}
	feasible, err := s.filter(ctx, state, pod, diagnosis.NodeToStatus, candidates)
	if err != nil || len(feasible) < 2 || !f.HasScorePlugins() {
		return feasible, nil, err
	}
	if s := f.RunPreScorePlugins(ctx, state, pod, feasible); !s.IsSuccess() {
		return nil, nil, s.AsError()
	}
	scores, status := f.RunScorePlugins(ctx, state, pod, feasible)
	if !status.IsSuccess() {
		return nil, nil, status.AsError()
	}
	return feasible, scores, nil
}

// filter runs the Filter plugins on every candidate, in parallel.
func (s *shadow) filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m *framework.NodeToStatus, candidates []fwk.NodeInfo) ([]fwk.NodeInfo, error) {
	f := s.framework
	if !f.HasFilterPlugins() {
		return candidates, nil
	}
	statuses := make([]*fwk.Status, len(candidates))
	f.Parallelizer().Until(ctx, len(candidates), func(i int) {
		statuses[i] = f.RunFilterPluginsWithNominatedPods(ctx, state, pod, candidates[i])
	}, "shadow")
	var feasible []fwk.NodeInfo
	for i, st := range statuses {
		switch {
		case st.IsSuccess():
			feasible = append(feasible, candidates[i])
		case st.Code() == fwk.Error:
			return nil, st.AsError()
		default:
			m.Set(candidates[i].Node().Name, st)
		}
	}
	a := attemptFrom(state)
	a.endFilter(len(feasible) > 0)
	return feasible, nil
}

// selectNode is the best of the feasible nodes: the highest total score,
// liveNode among equals; with no scores, liveNode if feasible, else the
// first.
func selectNode(feasible []fwk.NodeInfo, scores []fwk.NodePluginScores, liveNode string) string {
	if len(scores) == 0 {
		for _, n := range feasible {
			if n.Node().Name == liveNode {
				return liveNode
			}
		}
		return feasible[0].Node().Name
	}
	best := scores[0]
	for _, s := range scores[1:] {
		if s.TotalScore > best.TotalScore || (s.TotalScore == best.TotalScore && s.Name == liveNode) {
			best = s
		}
	}
	return best.Name
}

// compare fills in the comparison of the shadow's choice with the live
// attempt's; shadowScores are the shadow's scores.
func (sr *shadowRun) compare(live *attempt, liveFit bool, liveNode string, shadowScores []fwk.NodePluginScores) {
	a := sr.attempt
	if a.result == record.ResultError {
		sr.notCompared(record.NotComparedShadowError)
		return
	}
	shadowFit := a.result == record.ResultScheduled
	switch {
	case liveFit && shadowFit && a.selectedNode == liveNode:
		sr.run.Outcome = record.ShadowSameNode
	case liveFit && shadowFit:
		sr.run.Outcome = record.ShadowOtherNode
	case liveFit:
		sr.run.Outcome = record.ShadowLiveOnly
	case shadowFit:
		sr.run.Outcome = record.ShadowShadowOnly
	default:
		sr.run.Outcome = record.ShadowNeither
	}
	if !liveFit || !shadowFit {
		return
	}
	if score, ok := totalScore(shadowScores, liveNode); ok {
		sr.run.LiveNodeScore = &score
		sr.run.LiveNodeRank = 1
		for _, s := range shadowScores {
			if s.TotalScore > score {
				sr.run.LiveNodeRank++
			}
		}
	}
	if score, ok := totalScore(live.scores, a.selectedNode); ok {
		sr.run.ShadowNodeLiveScore = &score
	}
}

func totalScore(scores []fwk.NodePluginScores, node string) (int64, bool) {
	for _, s := range scores {
		if s.Name == node {
			return s.TotalScore, true
		}
	}
	return 0, false
}

// postFilter is the shadow's PostFilter answer for a pod no node fits: its
// PostFilter plugins in order until one would help. DefaultPreemption is
// dry-run; the others are not called, as they act as they decide.
func (s *shadow) postFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, m *framework.NodeToStatus) []record.ShadowPostFilter {
	var out []record.ShadowPostFilter
	for _, p := range s.postFilters {
		if p.preemption == nil {
			out = append(out, record.ShadowPostFilter{Plugin: p.name, Message: "not called: a shadow dry-runs DefaultPreemption only, and calls no other PostFilter plugin"})
			continue
		}
		start := time.Now()
		answer := dryRunPreemption(ctx, p.preemption, state, pod, nodes, m)
		attemptFrom(state).addPoint(pointPostFilter, start, answerStatus(answer))
		out = append(out, answer)
		if answer.Code == record.CodeSuccess {
			break
		}
	}
	return out
}

func answerStatus(answer record.ShadowPostFilter) *fwk.Status {
	if answer.Code == record.CodeSuccess {
		return nil
	}
	code := fwk.Unschedulable
	if answer.Code == record.CodeError {
		code = fwk.Error
	}
	return fwk.NewStatus(code, answer.Message).WithPlugin(answer.Plugin)
}

// dryRunPreemption is what DefaultPreemption would answer for pod, without
// acting on it: the candidates of its dry run and the one it would
// choose, the steps of its Evaluator before it prepares a candidate
// (evicting victims and nominating the node), which this never does.
func dryRunPreemption(ctx context.Context, pl *defaultpreemption.DefaultPreemption, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, m *framework.NodeToStatus) record.ShadowPostFilter {
	answer := record.ShadowPostFilter{Plugin: pl.Name(), DryRun: true, Code: record.CodeUnschedulable}
	if ok, msg := pl.PodEligibleToPreemptOthers(ctx, pod, m.Get(pod.Status.NominatedNodeName)); !ok {
		answer.Message = record.CutText(msg, record.MaxTextBytes)
		return answer
	}
	var potential []fwk.NodeInfo
	for _, n := range nodes {
		if m.Get(n.Node().Name).Code() == fwk.Unschedulable {
			potential = append(potential, n)
		}
	}
	if len(potential) == 0 {
		answer.Message = "preemption is not helpful for scheduling"
		return answer
	}
	pdbs, err := pdbsOf(pl.Evaluator.Handler)
	if err != nil {
		answer.Code, answer.Message = record.CodeError, record.CutText(err.Error(), record.MaxTextBytes)
		return answer
	}
	offset, num := pl.GetOffsetAndNumCandidates(int32(len(potential)))
	candidates, _, err := pl.Evaluator.DryRunPreemption(ctx, state, pod, potential, pdbs, offset, num)
	if err != nil {
		answer.Code, answer.Message = record.CodeError, record.CutText(err.Error(), record.MaxTextBytes)
		return answer
	}
	best := pl.Evaluator.SelectCandidate(ctx, candidates)
	if best == nil || best.Name() == "" {
		answer.Message = "no node where preemption would help"
		return answer
	}
	answer.Code, answer.NominatedNode = record.CodeSuccess, best.Name()
	for _, v := range best.Victims().Pods {
		answer.Victims = append(answer.Victims, record.PodRef{Namespace: v.Namespace, Name: v.Name, UID: string(v.UID)})
	}
	return answer
}

// shadowRecords builds the records of the shadow runs of an attempt.
func (a *attempt) shadowRecords() []record.ShadowRun {
	if len(a.shadows) == 0 {
		return nil
	}
	out := make([]record.ShadowRun, len(a.shadows))
	for i, sr := range a.shadows {
		out[i] = sr.run
		out[i].Attempt = sr.attempt.build()
	}
	return out
}

// releaseShadows releases the shadow runs' attempts.
func (a *attempt) releaseShadows() {
	for _, sr := range a.shadows {
		sr.attempt.release()
	}
	a.shadows = nil
}

// pdbsOf lists the cluster's PodDisruptionBudgets, as preemption does.
func pdbsOf(h fwk.Handle) ([]*policy.PodDisruptionBudget, error) {
	return h.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Lister().List(labels.Everything())
}

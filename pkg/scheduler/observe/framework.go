package observe

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
)

// Install makes sched record its attempts: any scheduler built by
// scheduler.New, with any registry of in-tree and out-of-tree plugins. Call
// it after scheduler.New and before the scheduler runs, once.
//
// The plugins of each profile's framework are observed where the framework
// keeps them (see observePlugins), and the framework itself is wrapped, so
// the scheduler's own calls into it are observed; the plugins keep the real
// framework as their handle, so the Filter calls preemption makes while it
// simulates evictions stay out of the recorded verdicts. The records name
// the pods preemption evicted when sched was built with r.RecorderFactory.
//
// The shadow profiles of r's Options are observed like the others, then
// taken out of sched's profiles: the scheduler schedules no pod with them.
// Each runs beside the sampled attempts of its live profile (see
// runShadows).
func (r *Recorder) Install(sched *scheduler.Scheduler) error {
	profiles := make([]string, 0, len(sched.Profiles))
	for name := range sched.Profiles {
		profiles = append(profiles, name)
	}
	if errs := CheckShadows(r.opts.Shadows, profiles); len(errs) > 0 {
		return errors.Join(errs...)
	}
	for name, f := range sched.Profiles {
		if !r.recordsVictimsFor(f) {
			klog.Background().Info("Preemption victims are not recorded: the scheduler was not built with the Recorder's RecorderFactory", "profile", name)
		}
		table := r.profileTable(name)
		if err := r.observePlugins(table, f); err != nil {
			return fmt.Errorf("observing profile %q: %w", name, err)
		}
		table.complete(f.ListPlugins())
		sched.Profiles[name] = &observedFramework{Framework: f, recorder: r, table: table}
	}
	if err := r.takeShadows(sched); err != nil {
		return err
	}

	r.observeSchedulePod(sched)

	failure := sched.FailureHandler
	sched.FailureHandler = func(ctx context.Context, f framework.Framework, podInfo *framework.QueuedPodInfo, status *fwk.Status, nominatingInfo *fwk.NominatingInfo, start time.Time) {
		failure(ctx, f, podInfo, status, nominatingInfo, start)
		r.fail(podInfo.Pod, status, nominatingInfo)
	}
	return nil
}

// schedulePod records the scheduling algorithm's run for podInfo, which
// schedule runs.
func (r *Recorder) schedulePod(ctx context.Context, f framework.Framework, state fwk.CycleState, podInfo *framework.QueuedPodInfo,
	schedule func() (scheduler.ScheduleResult, error)) (scheduler.ScheduleResult, error) {
	a := r.begin(f, state, podInfo)
	a.table.current.Store(a)
	result, err := schedule()
	a.table.current.Store(nil)
	a.explainAttempt(ctx, state)
	a.endFilter(err == nil)
	a.selectedNode = result.SuggestedHost
	a.feasible = result.FeasibleNodes
	var fitErr *framework.FitError
	if errors.As(err, &fitErr) {
		a.message = fitErr.Error()
	}
	r.runShadows(ctx, f, a, result, err)
	return result, err
}

// begin starts recording an attempt.
func (r *Recorder) begin(f framework.Framework, state fwk.CycleState, podInfo *framework.QueuedPodInfo) *attempt {
	queued := podInfo.Timestamp
	a := newAttempt(r.profileTable(f.ProfileName()), podInfo.Pod, podInfo.Attempts, queued, time.Now(), r.nodeSetOf(snapshotNodes(f)))
	state.Write(stateKey, a)
	r.inflight.Store(podInfo.Pod.UID, a)
	return a
}

// snapshotNodes returns the nodes of f's snapshot.
func snapshotNodes(f framework.Framework) []fwk.NodeInfo {
	lister := f.SnapshotSharedLister()
	if lister == nil {
		return nil
	}
	nodes, _ := lister.NodeInfos().List()
	return nodes
}

// fail ends an attempt the scheduler gave up on.
func (r *Recorder) fail(pod *v1.Pod, status *fwk.Status, nominatingInfo *fwk.NominatingInfo) {
	a := r.inflightAttempt(pod.UID)
	if a == nil {
		return
	}
	now := time.Now()
	if a.cycleEnd.IsZero() {
		a.cycleEnd = now
	}
	a.finished = now
	a.result = record.ResultError
	if status.IsRejected() {
		a.result = record.ResultUnschedulable
	}
	if a.message == "" {
		a.message = status.Message()
	}
	if a.failedPoint == "" {
		a.failedPoint = failedPoint(a)
	}
	if nominatingInfo != nil && nominatingInfo.Mode() == fwk.ModeOverride {
		a.nominatedNode = nominatingInfo.NominatedNodeName
	}
	r.finish(a)
}

// failedPoint is the last extension point that did not succeed.
func failedPoint(a *attempt) string {
	for i := len(a.points) - 1; i >= 0; i-- {
		if p := a.points[i]; p.Code != fwk.Success.String() && p.Point != record.Unreserve && p.Point != record.PostFilter {
			return p.Point
		}
	}
	return ""
}

// observedFramework is a profile's framework as the scheduler sees it: every
// call passes through unchanged, and the calls that decide are recorded.
type observedFramework struct {
	framework.Framework
	recorder *Recorder
	table    *profileTable
}

// snapshotNodes returns the nodes of the framework's snapshot.
func (f *observedFramework) snapshotNodes() []fwk.NodeInfo { return snapshotNodes(f.Framework) }

// RunPreFilterPlugins first takes the nodes of the snapshot the attempt
// filters: before v1.37 the scheduling algorithm updates the snapshot
// after the attempt began, at its own start.
func (f *observedFramework) RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string]) {
	a := attemptFrom(state)
	if a != nil {
		a.useNodes(f.recorder.nodeSetOf(f.snapshotNodes()))
	}
	start := time.Now()
	result, s, unresolved := f.Framework.RunPreFilterPlugins(ctx, state, pod)
	if a != nil {
		a.addPoint(pointPreFilter, start, s)
		a.preFilterStatus = s
		a.preFilterResult = result
		a.filterStart = time.Now()
	}
	return result, s, unresolved
}

func (f *observedFramework) RunFilterPluginsWithNominatedPods(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s := f.Framework.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo)
	if a := f.table.current.Load(); a != nil {
		a.addVerdict(nodeInfo.Node().Name, s)
	}
	return s
}

func (f *observedFramework) RunPostFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	start := time.Now()
	result, s := f.Framework.RunPostFilterPlugins(ctx, state, pod, m)
	if a := attemptFrom(state); a != nil {
		a.addPoint(pointPostFilter, start, s)
	}
	return result, s
}

func (f *observedFramework) RunPreScorePlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	a := attemptFrom(state)
	if a != nil {
		a.endFilter(true)
	}
	start := time.Now()
	s := f.Framework.RunPreScorePlugins(ctx, state, pod, nodes)
	if a != nil {
		a.addPoint(pointPreScore, start, s)
	}
	return s
}

func (f *observedFramework) RunScorePlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	a := attemptFrom(state)
	if a != nil {
		a.endFilter(true)
	}
	start := time.Now()
	scores, s := f.Framework.RunScorePlugins(ctx, state, pod, nodes)
	if a != nil {
		a.addPoint(pointScore, start, s)
		a.scores = scores
		a.scored = s.IsSuccess()
	}
	return scores, s
}

func (f *observedFramework) RunReservePluginsReserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := f.Framework.RunReservePluginsReserve(ctx, state, pod, nodeName)
	if a := attemptFrom(state); a != nil {
		a.addPoint(pointReserve, start, s)
	}
	return s
}

func (f *observedFramework) RunReservePluginsUnreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) {
	start := time.Now()
	f.Framework.RunReservePluginsUnreserve(ctx, state, pod, nodeName)
	if a := attemptFrom(state); a != nil {
		a.addPoint(pointUnreserve, start, nil)
	}
}

// permitted records a run of the Permit plugins that started at start and
// returned s (RunPermitPlugins is in the seam: its results differ by minor).
func permitted(state fwk.CycleState, start time.Time, s *fwk.Status) {
	if a := attemptFrom(state); a != nil {
		a.addPoint(pointPermit, start, s)
		if s.IsSuccess() || s.IsWait() {
			a.cycleEnd = time.Now()
		}
	}
}

func (f *observedFramework) RunPreBindPreFlights(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if a := attemptFrom(state); a != nil && a.bindingStart.IsZero() {
		a.bindingStart = time.Now()
	}
	return f.Framework.RunPreBindPreFlights(ctx, state, pod, nodeName)
}

func (f *observedFramework) WaitOnPermit(ctx context.Context, pod *v1.Pod) *fwk.Status {
	start := time.Now()
	s := f.Framework.WaitOnPermit(ctx, pod)
	if a := f.recorder.inflightAttempt(pod.UID); a != nil {
		if a.bindingStart.IsZero() {
			a.bindingStart = start
		}
		a.addPoint(pointWaitOnPermit, start, s)
	}
	return s
}

func (f *observedFramework) RunPreBindPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := f.Framework.RunPreBindPlugins(ctx, state, pod, nodeName)
	if a := attemptFrom(state); a != nil {
		a.addPoint(pointPreBind, start, s)
	}
	return s
}

func (f *observedFramework) RunBindPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	start := time.Now()
	s := f.Framework.RunBindPlugins(ctx, state, pod, nodeName)
	if a := attemptFrom(state); a != nil {
		a.bindCall = a.addPoint(pointBind, start, s)
	}
	return s
}

// RunPostBindPlugins is the last step of a successful binding cycle, so it
// finishes the attempt.
func (f *observedFramework) RunPostBindPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) {
	start := time.Now()
	f.Framework.RunPostBindPlugins(ctx, state, pod, nodeName)
	a := attemptFrom(state)
	if a == nil {
		return
	}
	a.addPoint(pointPostBind, start, nil)
	a.finished = time.Now()
	a.result = record.ResultScheduled
	a.selectedNode = nodeName
	f.recorder.finish(a)
}

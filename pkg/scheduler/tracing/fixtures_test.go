package tracing_test

import (
	"time"

	"github.com/schedscope/schedscope/pkg/record"
)

// t0 is when the pods of the fixtures were queued.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func at(offset time.Duration) time.Time { return t0.Add(offset) }

func point(name string, start, d time.Duration, code string) record.PointRun {
	return record.PointRun{Point: name, Start: at(start), Duration: d, Code: code}
}

// scheduledRecord is an attempt that bound pod default/<name> to node-2:
// queued 5ms, a 3ms scheduling cycle, a 4ms binding cycle.
func scheduledRecord(name, uid string) *record.Attempt {
	return &record.Attempt{
		Pod:          record.PodRef{Namespace: "default", Name: name, UID: uid},
		Profile:      "default-scheduler",
		Attempt:      1,
		Result:       record.ResultScheduled,
		SelectedNode: "node-2",
		Timing: record.Timing{
			Queued:          at(0),
			Started:         at(ms(5)),
			Finished:        at(ms(12.5)),
			QueueWait:       ms(5),
			SchedulingCycle: ms(3),
			BindingCycle:    ms(4),
			BindCall:        ms(3),
		},
		Points: []record.PointRun{
			point(record.PreFilter, ms(5), ms(0.2), "Success"),
			point(record.Filter, ms(5.2), ms(1), "Success"),
			point(record.PreScore, ms(6.2), ms(0.1), "Success"),
			point(record.Score, ms(6.3), ms(1), "Success"),
			point(record.Reserve, ms(7.3), ms(0.1), "Success"),
			point(record.Permit, ms(7.4), ms(0.1), "Success"),
			point(record.WaitOnPermit, ms(8.5), ms(0.01), "Success"),
			point(record.PreBind, ms(8.6), ms(0.1), "Success"),
			point(record.Bind, ms(8.7), ms(3), "Success"),
			point(record.PostBind, ms(11.7), ms(0.1), "Success"),
		},
		Plugins: []record.PluginRun{
			{Plugin: "NodeResourcesFit", Point: record.PreFilter, Duration: ms(0.05), Calls: 1, Code: "Success"},
			{Plugin: "NodeResourcesFit", Point: record.Filter, Duration: ms(0.6), Calls: 3},
			{Plugin: "TaintToleration", Point: record.Filter, Duration: ms(0.3), Calls: 3},
			{Plugin: "NodeResourcesFit", Point: record.Score, Duration: ms(0.5), Calls: 3},
			{Plugin: "ImageLocality", Point: record.Score, Duration: ms(0.4), Calls: 3},
			{Plugin: "DefaultBinder", Point: record.Bind, Duration: ms(3), Calls: 1, Code: "Success"},
		},
		Nodes: record.NodeCounts{Total: 3, Evaluated: 3, Feasible: 3},
		Filter: []record.VerdictGroup{
			{Verdict: record.VerdictPassed, Nodes: []string{"node-1", "node-2", "node-3"}},
		},
		Scores: &record.Scores{
			Plugins: []record.ScorePlugin{{Name: "NodeResourcesFit", Weight: 1}, {Name: "ImageLocality", Weight: 1}},
			Nodes: []record.NodeScore{
				{Node: "node-2", Raw: []int64{90, 60}, Normalized: []int64{90, 60}, Weighted: []int64{90, 60}, Total: 150},
				{Node: "node-1", Raw: []int64{70, 50}, Normalized: []int64{70, 50}, Weighted: []int64{70, 50}, Total: 120},
				{Node: "node-3", Raw: []int64{60, 30}, Normalized: []int64{60, 30}, Weighted: []int64{60, 30}, Total: 90},
			},
		},
	}
}

// unschedulableRecord is an attempt where every node was rejected: three by
// TaintToleration, two by NodeResourcesFit, and preemption found nothing.
func unschedulableRecord(name, uid string) *record.Attempt {
	return &record.Attempt{
		Pod:         record.PodRef{Namespace: "default", Name: name, UID: uid},
		Profile:     "default-scheduler",
		Attempt:     1,
		Result:      record.ResultUnschedulable,
		Message:     "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {dedicated: gpu}.",
		FailedPoint: record.Filter,
		Timing: record.Timing{
			Queued:          at(0),
			Started:         at(ms(2)),
			Finished:        at(ms(4)),
			QueueWait:       ms(2),
			SchedulingCycle: ms(2),
		},
		Points: []record.PointRun{
			point(record.PreFilter, ms(2), ms(0.1), "Success"),
			{Point: record.Filter, Start: at(ms(2.1)), Duration: ms(1), Code: "Unschedulable",
				Reasons: []string{"0/5 nodes are available"}},
			{Point: record.PostFilter, Start: at(ms(3.1)), Duration: ms(0.8), Code: "Unschedulable",
				Plugin: "DefaultPreemption", Reasons: []string{"preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod."}},
		},
		Plugins: []record.PluginRun{
			{Plugin: "TaintToleration", Point: record.Filter, Duration: ms(0.2), Calls: 5},
			{Plugin: "NodeResourcesFit", Point: record.Filter, Duration: ms(0.3), Calls: 2},
			{Plugin: "DefaultPreemption", Point: record.PostFilter, Duration: ms(0.8), Calls: 1, Code: "Unschedulable"},
		},
		Nodes: record.NodeCounts{Total: 5, Evaluated: 5},
		Filter: []record.VerdictGroup{
			{Verdict: record.VerdictRejected, Plugin: "NodeResourcesFit", Code: "Unschedulable",
				Reasons: []string{"Insufficient cpu"}, Nodes: []string{"node-4", "node-5"}},
			{Verdict: record.VerdictRejected, Plugin: "TaintToleration", Code: "UnschedulableAndUnresolvable",
				Reasons: []string{"node(s) had untolerated taint {dedicated: gpu}"}, Nodes: []string{"node-1", "node-2", "node-3"}},
		},
	}
}

// preemptingRecord is an unschedulable attempt whose preemption nominated
// node-4 and chose two victims.
func preemptingRecord(name, uid string) *record.Attempt {
	rec := unschedulableRecord(name, uid)
	rec.Message = "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {dedicated: gpu}. preemption: nominated node-4"
	rec.NominatedNode = "node-4"
	rec.Victims = []record.PodRef{
		{Namespace: "default", Name: "low-1", UID: "v1"},
		{Namespace: "batch", Name: "low-2", UID: "v2"},
	}
	rec.Points[2] = record.PointRun{Point: record.PostFilter, Start: at(ms(3.1)), Duration: ms(0.8), Code: "Success", Plugin: "DefaultPreemption"}
	rec.Plugins[2] = record.PluginRun{Plugin: "DefaultPreemption", Point: record.PostFilter, Duration: ms(0.8), Calls: 1, Code: "Success"}
	return rec
}

// permitWaitingRecord is a scheduled attempt whose Permit plugin made the
// pod wait 1.5s (of 2s allowed) in WaitOnPermit.
func permitWaitingRecord(name, uid string) *record.Attempt {
	rec := scheduledRecord(name, uid)
	rec.Points[5] = point(record.Permit, ms(7.4), ms(0.1), "Wait")
	rec.Points[6] = point(record.WaitOnPermit, ms(8.5), 1500*time.Millisecond, "Success")
	shift := 1500*time.Millisecond - ms(0.01)
	for i := 7; i < len(rec.Points); i++ {
		rec.Points[i].Start = rec.Points[i].Start.Add(shift)
	}
	rec.Timing.Finished = rec.Timing.Finished.Add(shift)
	rec.Timing.BindingCycle += shift
	rec.Plugins = append(rec.Plugins, record.PluginRun{
		Plugin: "Coscheduling", Point: record.Permit, Duration: ms(0.05), Calls: 1, Code: "Wait", PermitWait: 2 * time.Second,
	})
	return rec
}

// bindFailureRecord is an attempt whose Bind failed with an error; the
// reservation was undone in the binding cycle.
func bindFailureRecord(name, uid string) *record.Attempt {
	rec := scheduledRecord(name, uid)
	rec.Result = record.ResultError
	rec.SelectedNode = "node-2"
	rec.FailedPoint = record.Bind
	rec.Message = `binding rejected: pods "web" is forbidden`
	rec.Points = append(rec.Points[:8],
		record.PointRun{Point: record.Bind, Start: at(ms(8.7)), Duration: ms(3), Code: "Error",
			Plugin: "DefaultBinder", Reasons: []string{`binding rejected: pods "web" is forbidden`}},
		point(record.Unreserve, ms(11.7), ms(0.1), "Success"),
	)
	rec.Plugins[len(rec.Plugins)-1].Code = "Error"
	return rec
}

// shadowedRecord is scheduledRecord with two shadow runs between the live
// Score and Reserve: binpack chose node-1 (0.2ms), and spread found no
// node while the snapshot changed (0.1ms), so it was not compared.
func shadowedRecord(name, uid string) *record.Attempt {
	rec := scheduledRecord(name, uid)
	rec.Points[4] = point(record.Reserve, ms(7.6), ms(0.1), "Success")
	rec.Points[5] = point(record.Permit, ms(7.7), ms(0.1), "Success")
	rec.Shadows = []record.ShadowRun{
		{
			Profile: "binpack",
			Outcome: record.ShadowOtherNode,
			Attempt: &record.Attempt{
				Pod: rec.Pod, Profile: "binpack", Attempt: 1, Result: record.ResultScheduled, SelectedNode: "node-1",
				Timing: record.Timing{Queued: at(0), Started: at(ms(7.3)), Finished: at(ms(7.5)), SchedulingCycle: ms(0.2)},
			},
		},
		{
			Profile:           "spread",
			Outcome:           record.ShadowNotCompared,
			NotComparedReason: record.NotComparedSnapshotChanged,
			Attempt: &record.Attempt{
				Pod: rec.Pod, Profile: "spread", Attempt: 1, Result: record.ResultUnschedulable,
				Timing: record.Timing{Queued: at(0), Started: at(ms(7.5)), Finished: at(ms(7.6)), SchedulingCycle: ms(0.1)},
			},
		},
	}
	return rec
}

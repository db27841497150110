package jaeger

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/schedscope/schedscope/pkg/record"
)

func ref(pod *v1.Pod) record.PodRef {
	return record.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}

func run(name string, start time.Time, d time.Duration, code string) record.PointRun {
	return record.PointRun{Point: name, Start: start, Duration: d, Code: code}
}

const us = time.Microsecond

// unschedulableAttempt is a first attempt at queued on a five-node cluster:
// three nodes are tainted, two lack CPU, and preemption finds no victims.
func unschedulableAttempt(pod *v1.Pod, queued time.Time) *record.Attempt {
	started := queued.Add(1200 * us)
	return &record.Attempt{
		Pod:         ref(pod),
		Profile:     "default-scheduler",
		Attempt:     1,
		Result:      record.ResultUnschedulable,
		Message:     "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod.",
		FailedPoint: record.PostFilter,
		Timing: record.Timing{
			Queued: queued, Started: started, Finished: started.Add(2100 * us),
			QueueWait: 1200 * us, SchedulingCycle: 2100 * us,
		},
		Points: []record.PointRun{
			run(record.PreFilter, started.Add(20*us), 150*us, "Success"),
			{Point: record.Filter, Start: started.Add(180 * us), Duration: 700 * us, Code: "Unschedulable"},
			{Point: record.PostFilter, Start: started.Add(900 * us), Duration: 1100 * us, Code: "Unschedulable", Plugin: "DefaultPreemption",
				Reasons: []string{"preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod."}},
		},
		Plugins: []record.PluginRun{
			{Plugin: "NodeResourcesFit", Point: record.PreFilter, Duration: 40 * us, Calls: 1, Code: "Success"},
			{Plugin: "TaintToleration", Point: record.Filter, Duration: 120 * us, Calls: 5},
			{Plugin: "NodeResourcesFit", Point: record.Filter, Duration: 210 * us, Calls: 2},
			{Plugin: "DefaultPreemption", Point: record.PostFilter, Duration: 1100 * us, Calls: 1, Code: "Unschedulable"},
		},
		Nodes: record.NodeCounts{Total: 5, Evaluated: 5},
		Filter: []record.VerdictGroup{
			{Verdict: record.VerdictRejected, Plugin: "TaintToleration", Code: "UnschedulableAndUnresolvable",
				Reasons: []string{"node(s) had untolerated taint {dedicated: gpu}"}, Nodes: []string{"gpu-1", "gpu-2", "gpu-3"}},
			{Verdict: record.VerdictRejected, Plugin: "NodeResourcesFit", Code: "Unschedulable",
				Reasons: []string{"Insufficient cpu"}, Nodes: []string{"node-a", "node-b"}},
		},
	}
}

// scheduledAttempt is a second attempt at queued that binds the pod to
// node-b after a Permit plugin held it for 40ms.
func scheduledAttempt(pod *v1.Pod, queued time.Time) *record.Attempt {
	started := queued.Add(800 * us)
	cycleEnd := started.Add(1900 * us)
	bindStart := cycleEnd.Add(60 * us)
	finished := bindStart.Add(40*time.Millisecond + 4500*us)
	return &record.Attempt{
		Pod:          ref(pod),
		Profile:      "default-scheduler",
		Attempt:      2,
		Result:       record.ResultScheduled,
		SelectedNode: "node-b",
		Timing: record.Timing{
			Queued: queued, Started: started, Finished: finished,
			QueueWait: 800 * us, SchedulingCycle: cycleEnd.Sub(started), BindingCycle: finished.Sub(bindStart),
			BindCall: 3800 * us,
		},
		Points: []record.PointRun{
			run(record.PreFilter, started.Add(10*us), 120*us, "Success"),
			run(record.Filter, started.Add(140*us), 600*us, "Success"),
			run(record.PreScore, started.Add(750*us), 50*us, "Success"),
			run(record.Score, started.Add(810*us), 700*us, "Success"),
			run(record.Reserve, started.Add(1520*us), 80*us, "Success"),
			run(record.Permit, started.Add(1610*us), 90*us, "Wait"),
			run(record.WaitOnPermit, bindStart.Add(5*us), 40*time.Millisecond, "Success"),
			run(record.PreBind, bindStart.Add(40*time.Millisecond+20*us), 300*us, "Success"),
			run(record.Bind, bindStart.Add(40*time.Millisecond+330*us), 3800*us, "Success"),
			run(record.PostBind, bindStart.Add(40*time.Millisecond+4150*us), 200*us, "Success"),
		},
		Plugins: []record.PluginRun{
			{Plugin: "NodeResourcesFit", Point: record.Filter, Duration: 260 * us, Calls: 5},
			{Plugin: "TaintToleration", Point: record.Filter, Duration: 90 * us, Calls: 5},
			{Plugin: "NodeResourcesFit", Point: record.Score, Duration: 310 * us, Calls: 2},
			{Plugin: "ImageLocality", Point: record.Score, Duration: 150 * us, Calls: 2},
			{Plugin: "Coscheduling", Point: record.Permit, Duration: 60 * us, Calls: 1, Code: "Wait", PermitWait: 10 * time.Second},
			{Plugin: "DefaultBinder", Point: record.Bind, Duration: 3800 * us, Calls: 1, Code: "Success"},
		},
		Nodes: record.NodeCounts{Total: 5, Evaluated: 5, Feasible: 2},
		Filter: []record.VerdictGroup{
			{Verdict: record.VerdictPassed, Nodes: []string{"node-a", "node-b"}},
			{Verdict: record.VerdictRejected, Plugin: "TaintToleration", Code: "UnschedulableAndUnresolvable",
				Reasons: []string{"node(s) had untolerated taint {dedicated: gpu}"}, Nodes: []string{"gpu-1", "gpu-2", "gpu-3"}},
		},
		Scores: &record.Scores{
			Plugins: []record.ScorePlugin{{Name: "NodeResourcesFit", Weight: 1}, {Name: "ImageLocality", Weight: 1}},
			Nodes: []record.NodeScore{
				{Node: "node-b", Raw: []int64{82, 40}, Normalized: []int64{82, 40}, Weighted: []int64{82, 40}, Total: 122},
				{Node: "node-a", Raw: []int64{61, 0}, Normalized: []int64{61, 0}, Weighted: []int64{61, 0}, Total: 61},
			},
		},
	}
}

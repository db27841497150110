// Package recordtest builds decision records for tests.
package recordtest

import (
	"fmt"
	"sort"
	"time"

	"github.com/schedscope/schedscope/pkg/record"
)

// Base is the time test records start at.
var Base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Wrapper builds a record.Attempt.
type Wrapper struct{ a record.Attempt }

// MakeAttempt starts a scheduled first attempt of a pod on no nodes.
func MakeAttempt(namespace, name, uid string) *Wrapper {
	return &Wrapper{a: record.Attempt{
		Pod:     record.PodRef{Namespace: namespace, Name: name, UID: uid},
		Profile: "default-scheduler",
		Attempt: 1,
		Result:  record.ResultScheduled,
		Timing: record.Timing{
			Queued:   Base,
			Started:  Base.Add(time.Millisecond),
			Finished: Base.Add(10 * time.Millisecond),
		},
	}}
}

// Obj returns the record.
func (w *Wrapper) Obj() *record.Attempt { a := w.a; return &a }

// Number sets the attempt number.
func (w *Wrapper) Number(n int) *Wrapper { w.a.Attempt = n; return w }

// Profile sets the scheduler profile.
func (w *Wrapper) Profile(p string) *Wrapper { w.a.Profile = p; return w }

// Finished moves the attempt's timing so that it finishes at t.
func (w *Wrapper) Finished(t time.Time) *Wrapper {
	w.a.Timing.Queued = t.Add(-10 * time.Millisecond)
	w.a.Timing.Started = t.Add(-9 * time.Millisecond)
	w.a.Timing.Finished = t
	return w
}

// Scheduled marks the attempt as scheduled on node.
func (w *Wrapper) Scheduled(node string) *Wrapper {
	w.a.Result = record.ResultScheduled
	w.a.SelectedNode = node
	w.a.Message = ""
	w.a.FailedPoint = ""
	return w
}

// Unschedulable marks the attempt as unschedulable with message.
func (w *Wrapper) Unschedulable(message string) *Wrapper {
	w.a.Result = record.ResultUnschedulable
	w.a.SelectedNode = ""
	w.a.Message = message
	w.a.FailedPoint = record.Filter
	return w
}

func (w *Wrapper) count(verdict string, n int) {
	w.a.Nodes.Total += n
	if verdict != record.VerdictNotEvaluated {
		w.a.Nodes.Evaluated += n
	}
	if verdict == record.VerdictPassed {
		w.a.Nodes.Feasible += n
	}
}

// Passed adds nodes that passed every filter.
func (w *Wrapper) Passed(nodes ...string) *Wrapper {
	w.count(record.VerdictPassed, len(nodes))
	w.a.Filter = append(w.a.Filter, record.VerdictGroup{Verdict: record.VerdictPassed, Nodes: sorted(nodes)})
	return w
}

// Rejected adds nodes rejected by plugin with reason.
func (w *Wrapper) Rejected(plugin, reason string, nodes ...string) *Wrapper {
	w.count(record.VerdictRejected, len(nodes))
	w.a.Filter = append(w.a.Filter, record.VerdictGroup{
		Verdict: record.VerdictRejected, Plugin: plugin, Code: record.CodeUnschedulable, Reasons: []string{reason}, Nodes: sorted(nodes),
	})
	return w
}

// NotEvaluated adds nodes the scheduler did not filter.
func (w *Wrapper) NotEvaluated(reason string, nodes ...string) *Wrapper {
	w.count(record.VerdictNotEvaluated, len(nodes))
	w.a.Filter = append(w.a.Filter, record.VerdictGroup{Verdict: record.VerdictNotEvaluated, NotEvaluatedReason: reason, Nodes: sorted(nodes)})
	return w
}

// Scores sets the score plugins (weight 1 each) and the scores of nodes:
// scores[node] holds one normalized value per plugin.
func (w *Wrapper) Scores(plugins []string, scores map[string][]int64) *Wrapper {
	s := &record.Scores{}
	for _, p := range plugins {
		s.Plugins = append(s.Plugins, record.ScorePlugin{Name: p, Weight: 1})
	}
	for node, vals := range scores {
		var total int64
		for _, v := range vals {
			total += v
		}
		s.Nodes = append(s.Nodes, record.NodeScore{Node: node, Raw: vals, Normalized: vals, Weighted: vals, Total: total})
	}
	sort.Slice(s.Nodes, func(i, j int) bool {
		if s.Nodes[i].Total != s.Nodes[j].Total {
			return s.Nodes[i].Total > s.Nodes[j].Total
		}
		return s.Nodes[i].Node < s.Nodes[j].Node
	})
	w.a.Scores = s
	return w
}

func sorted(nodes []string) []string {
	out := append([]string(nil), nodes...)
	sort.Strings(out)
	return out
}

// NodeNames returns n node names node-00000, node-00001, ...
func NodeNames(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, from+i)
	}
	return out
}

// Large returns an attempt over nodes nodes shaped like a busy cluster:
// 60% rejected by three plugins, the rest feasible and scored by five
// plugins, with a full set of extension point and plugin timings.
func Large(i, nodes int) *record.Attempt {
	names := NodeNames("node", 0, nodes)
	rejected := nodes * 6 / 10
	w := MakeAttempt("load", fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i)).
		Finished(Base.Add(time.Duration(i)*time.Millisecond)).
		Rejected("NodeResourcesFit", "Insufficient cpu", names[:rejected/2]...).
		Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", names[rejected/2:rejected*5/6]...).
		Rejected("NodeAffinity", "node(s) didn't match Pod's node affinity/selector", names[rejected*5/6:rejected]...).
		Passed(names[rejected:]...)
	plugins := []string{"NodeResourcesFit", "NodeResourcesBalancedAllocation", "ImageLocality", "InterPodAffinity", "TaintToleration"}
	scores := map[string][]int64{}
	for j, n := range names[rejected:] {
		scores[n] = []int64{int64(j % 100), int64((j * 7) % 100), int64((j * 13) % 100), 0, 100}
	}
	w.Scores(plugins, scores)
	a := w.Obj()
	a.SelectedNode = a.Scores.Nodes[0].Node
	for _, p := range []string{record.PreFilter, record.Filter, record.PostFilter, record.PreScore, record.Score, record.NormalizeScore, record.Reserve, record.Permit, record.PreBind, record.Bind} {
		a.Points = append(a.Points, record.PointRun{Point: p, Duration: 123456 * time.Nanosecond, Code: record.CodeSuccess})
	}
	for _, p := range plugins {
		a.Plugins = append(a.Plugins, record.PluginRun{Plugin: p, Point: record.Score, Duration: 987654, Calls: int64(nodes - rejected)})
		a.Plugins = append(a.Plugins, record.PluginRun{Plugin: p, Point: record.Filter, Duration: 987654, Calls: int64(nodes)})
	}
	return a
}

// defaultScorePlugins are the score plugins of kube-scheduler's default
// profile.
var defaultScorePlugins = []string{"TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"}

// defaultFilterPlugins are the filter plugins of kube-scheduler's default
// profile.
var defaultFilterPlugins = []string{"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity"}

// Typical returns the attempt kube-scheduler's default profile makes for a
// pod that fits every one of nodes nodes: it filters nodes until it has
// found as many feasible ones as percentageOfNodesToScore asks (the
// adaptive default, 500 of 5000), scores those with the default score
// plugins, and lists the others as not evaluated, by count.
func Typical(i, nodes int) *record.Attempt {
	feasible := min(nodes, max(nodes*max(50-nodes/125, 5)/100, 100))
	names := NodeNames("node", 0, nodes)
	w := MakeAttempt("load", fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i)).
		Finished(Base.Add(time.Duration(i) * time.Millisecond)).
		Passed(names[:feasible]...)
	if feasible < nodes {
		w.a.Nodes.Total += nodes - feasible
		w.a.Filter = append(w.a.Filter, record.VerdictGroup{Verdict: record.VerdictNotEvaluated, NotEvaluatedReason: record.NotEvaluatedEnoughFeasible, Count: nodes - feasible})
	}
	scores := map[string][]int64{}
	for j, n := range names[:feasible] {
		scores[n] = []int64{100, 0, int64(90 + j%10), 0, 200, 0, int64(95 + j%5), 0}
	}
	w.Scores(defaultScorePlugins, scores)
	a := w.Obj()
	a.SelectedNode = a.Scores.Nodes[0].Node
	for _, p := range []string{record.PreFilter, record.Filter, record.PreScore, record.Score, record.NormalizeScore, record.Reserve, record.Permit, record.WaitOnPermit, record.PreBind, record.Bind, record.PostBind} {
		a.Points = append(a.Points, record.PointRun{Point: p, Start: a.Timing.Started, Duration: 123456 * time.Nanosecond, Code: record.CodeSuccess})
	}
	for _, p := range defaultFilterPlugins {
		a.Plugins = append(a.Plugins, record.PluginRun{Plugin: p, Point: record.Filter, Duration: 987654, Calls: int64(feasible), Timed: int64(16 + (feasible-16)/8)})
	}
	for _, p := range defaultScorePlugins {
		a.Plugins = append(a.Plugins, record.PluginRun{Plugin: p, Point: record.Score, Duration: 987654, Calls: int64(feasible), Timed: int64(16 + (feasible-16)/8)})
	}
	return a
}

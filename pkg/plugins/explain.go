// Package plugins is what a scheduler plugin implements to explain itself in
// schedscope's decision records. A plugin imports it alone: it names only the
// scheduling framework's types, never the recorder.
//
// A plugin implements one or both of these optional interfaces, beside the
// framework's. What it returns is shown by the explain API, the web page and
// the kubectl plugin with the plugin's verdicts. A record keeps at most
// [github.com/schedscope/schedscope/pkg/record.MaxDetails] details, each cut
// to [github.com/schedscope/schedscope/pkg/record.MaxDetailBytes], so a
// detail should be one short sentence ("NUMA zone 1 lacks 2 CPUs"). The
// scheduler's decisions never depend on them, and a plugin that implements
// neither is observed all the same.
package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// FilterExplainer is a Filter plugin that explains the nodes it rejects.
type FilterExplainer interface {
	// ExplainFilter returns the plugin's detail on why it rejected pod on
	// nodeInfo with status, or "" for none. It is called right after the
	// rejecting Filter call of a recorded attempt, on the same goroutine
	// and with the same state, so it may read what the plugin stored there;
	// like Filter, it runs in parallel for different nodes.
	ExplainFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo, status *fwk.Status) string
}

// AttemptExplainer is a plugin that explains an attempt as a whole.
type AttemptExplainer interface {
	// ExplainAttempt returns the plugin's detail on the attempt of pod
	// whose scheduling algorithm (PreFilter to Score) just ended, or "" for
	// none. It is called once per recorded attempt, on the scheduling
	// goroutine, with the attempt's state.
	ExplainAttempt(ctx context.Context, state fwk.CycleState, pod *v1.Pod) string
}

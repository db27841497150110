package observe

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"

	schedscopeplugins "github.com/schedscope/schedscope/pkg/plugins"
	"github.com/schedscope/schedscope/pkg/record"
)

// addDetail keeps a plugin's detail, what its explainer (package
// github.com/schedscope/schedscope/pkg/plugins) returned, within the
// record's bounds.
func (a *attempt) addDetail(plugin int, node, detail string) {
	if detail == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.details) >= record.MaxDetails {
		a.detailsCut++
		return
	}
	a.details = append(a.details, record.PluginDetail{Plugin: a.table.plugins[plugin], Node: node, Detail: record.CutText(detail, record.MaxDetailBytes)})
}

// explainAttempt asks the profile's attempt explainers about a.
func (a *attempt) explainAttempt(ctx context.Context, state fwk.CycleState) {
	for _, e := range a.table.explainers {
		a.addDetail(e.index, "", e.explainer.ExplainAttempt(ctx, state, a.pod))
	}
}

// attemptExplainer is a plugin of a profile that explains attempts.
type attemptExplainer struct {
	index     int
	explainer schedscopeplugins.AttemptExplainer
}

package record

import (
	"cmp"
	"slices"
)

// MarginExtenders names the extenders' share of a Margin.
const MarginExtenders = "extenders"

// Margin says why the chosen node beat the runner-up, the scored node
// with the next highest total: by how much, and which score plugins' weighted
// scores made the difference.
type Margin struct {
	// Node is the chosen node and RunnerUp the other scored node with the
	// highest total.
	Node     string `json:"node"`
	RunnerUp string `json:"runnerUp"`
	// By is Node's total minus RunnerUp's; 0 is a tie, which the
	// scheduler breaks at random.
	By int64 `json:"by"`
	// Plugins are the score plugins (and MarginExtenders) whose weighted
	// scores differ between the two nodes, most in Node's favour first.
	Plugins []PluginMargin `json:"plugins,omitempty"`
}

// PluginMargin is one plugin's weighted score on the chosen node minus
// its weighted score on the runner-up.
type PluginMargin struct {
	Plugin string `json:"plugin"`
	By     int64  `json:"by"`
}

// Margin returns why the chosen node beat the runner-up; nil unless the
// attempt chose a node and scored it and at least one other.
func (a *Attempt) Margin() *Margin {
	if a.SelectedNode == "" || a.Scores == nil {
		return nil
	}
	var chosen, runnerUp *NodeScore
	for i := range a.Scores.Nodes {
		n := &a.Scores.Nodes[i]
		switch {
		case n.Node == a.SelectedNode:
			chosen = n
		case runnerUp == nil || n.Total > runnerUp.Total:
			runnerUp = n
		}
	}
	if chosen == nil || runnerUp == nil {
		return nil
	}
	m := &Margin{Node: chosen.Node, RunnerUp: runnerUp.Node, By: chosen.Total - runnerUp.Total}
	for i, p := range a.Scores.Plugins {
		if i < len(chosen.Weighted) && i < len(runnerUp.Weighted) && chosen.Weighted[i] != runnerUp.Weighted[i] {
			m.Plugins = append(m.Plugins, PluginMargin{Plugin: p.Name, By: chosen.Weighted[i] - runnerUp.Weighted[i]})
		}
	}
	if d := chosen.Extenders - runnerUp.Extenders; d != 0 {
		m.Plugins = append(m.Plugins, PluginMargin{Plugin: MarginExtenders, By: d})
	}
	slices.SortStableFunc(m.Plugins, func(x, y PluginMargin) int { return cmp.Compare(y.By, x.By) })
	return m
}

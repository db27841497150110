package record

import (
	"cmp"
	"slices"
)

// ShadowDifferences returns the plugins behind the difference between the
// live attempt a and its shadow run, most decisive first: for otherNode, the
// shadow's Filter plugin that rejected the live attempt's node or else the
// shadow's score plugins whose weighted scores favour its own node over the
// live attempt's, largest first; for liveOnly, the shadow's plugin that
// rejected the live attempt's node; for shadowOnly, the live attempt's
// plugin that rejected the shadow's node. It is empty for the other
// outcomes, and when the records do not hold the answer.
func (a *Attempt) ShadowDifferences(run *ShadowRun) []string {
	s := run.Attempt
	if s == nil {
		return nil
	}
	switch run.Outcome {
	case ShadowOtherNode:
		if p := s.rejectedBy(a.SelectedNode); p != "" {
			return []string{p}
		}
		return s.favouring(s.SelectedNode, a.SelectedNode)
	case ShadowLiveOnly:
		if p := s.rejectedBy(a.SelectedNode); p != "" {
			return []string{p}
		}
	case ShadowShadowOnly:
		if p := a.rejectedBy(s.SelectedNode); p != "" {
			return []string{p}
		}
	}
	return nil
}

// rejectedBy returns the plugin that rejected node in a: the Filter plugin
// of its rejected group, or, when Filter never ran on it, the first
// PreFilter plugin that did not succeed or whose node subset left node
// out. It returns "" when node passed.
func (a *Attempt) rejectedBy(node string) string {
	if node == "" {
		return ""
	}
	for _, g := range a.Filter {
		if _, found := slices.BinarySearch(g.Nodes, node); !found {
			continue
		}
		if g.Verdict == VerdictRejected {
			return g.Plugin
		}
		return ""
	}
	for _, p := range a.PreFilter {
		if p.Code != "" && p.Code != CodeSuccess && p.Code != CodeSkip {
			return p.Plugin
		}
		if p.NodeNames != nil && !slices.Contains(p.NodeNames, node) {
			return p.Plugin
		}
	}
	return ""
}

// favouring returns the score plugins whose weighted score of node is above
// their weighted score of other, by how much, largest first.
func (a *Attempt) favouring(node, other string) []string {
	if a.Scores == nil {
		return nil
	}
	var n, o *NodeScore
	for i := range a.Scores.Nodes {
		switch a.Scores.Nodes[i].Node {
		case node:
			n = &a.Scores.Nodes[i]
		case other:
			o = &a.Scores.Nodes[i]
		}
	}
	if n == nil || o == nil {
		return nil
	}
	var by []PluginMargin
	for i, p := range a.Scores.Plugins {
		if i < len(n.Weighted) && i < len(o.Weighted) && n.Weighted[i] > o.Weighted[i] {
			by = append(by, PluginMargin{Plugin: p.Name, By: n.Weighted[i] - o.Weighted[i]})
		}
	}
	if d := n.Extenders - o.Extenders; d > 0 {
		by = append(by, PluginMargin{Plugin: MarginExtenders, By: d})
	}
	slices.SortStableFunc(by, func(x, y PluginMargin) int { return cmp.Compare(y.By, x.By) })
	plugins := make([]string, len(by))
	for i, m := range by {
		plugins[i] = m.Plugin
	}
	return plugins
}

package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
)

// AllGroups selects the rows of every group.
const AllGroups = -1

// Options select a page of rows.
type Options struct {
	// Group keeps the rows of one verdict group (an index into Groups), or
	// AllGroups.
	Group int
	// Offset and Limit select the page; Limit 0 means every row.
	Offset, Limit int
}

type layout struct {
	groups []v1alpha1.Group
	rows   []v1alpha1.NodeRow
	scores map[string]*record.NodeScore
	ranks  map[string]int
	byNode map[string]int // row index
}

func build(a *record.Attempt) *layout {
	l := &layout{scores: map[string]*record.NodeScore{}, ranks: map[string]int{}, byNode: map[string]int{}}
	details := map[string][]v1alpha1.PluginDetail{}
	for _, d := range a.Details {
		if d.Node != "" {
			details[d.Node] = append(details[d.Node], v1alpha1.ConvertDetail(d))
		}
	}
	if a.Scores != nil {
		for i := range a.Scores.Nodes {
			ns := &a.Scores.Nodes[i]
			l.scores[ns.Node] = ns
			l.ranks[ns.Node] = i + 1
		}
	}
	filter := append([]record.VerdictGroup(nil), a.Filter...)
	sort.SliceStable(filter, func(i, j int) bool {
		oi, oj := filter[i].Rank(), filter[j].Rank()
		if oi != oj {
			return oi < oj
		}
		if filter[i].Plugin != filter[j].Plugin {
			return filter[i].Plugin < filter[j].Plugin
		}
		return strings.Join(filter[i].Reasons, "\n") < strings.Join(filter[j].Reasons, "\n")
	})
	var chosen *v1alpha1.NodeRow
	var scored, unscored, rest []v1alpha1.NodeRow
	for gi, g := range filter {
		grp := v1alpha1.Group{Index: gi, Verdict: g.Verdict, Plugin: g.Plugin, Reasons: g.Reasons, NotEvaluatedReason: g.NotEvaluatedReason, Nodes: max(g.Count, len(g.Nodes))}
		for _, n := range g.Nodes {
			row := v1alpha1.NodeRow{Node: n, Group: gi, Verdict: g.Verdict, Plugin: g.Plugin, Reasons: g.Reasons, NotEvaluatedReason: g.NotEvaluatedReason, Details: details[n]}
			if s, ok := l.scores[n]; ok {
				row.Rank = l.ranks[n]
				row.Scores = s.Weighted
				total := s.Total
				row.Total = &total
			}
			switch {
			case n == a.SelectedNode && a.SelectedNode != "":
				row.Chosen = true
				grp.HasChosen = true
				r := row
				chosen = &r
			case row.Rank > 0:
				scored = append(scored, row)
			case g.Verdict == record.VerdictPassed:
				unscored = append(unscored, row)
			default:
				rest = append(rest, row)
			}
		}
		l.groups = append(l.groups, grp)
	}
	sort.SliceStable(scored, func(i, j int) bool { return scored[i].Rank < scored[j].Rank })
	if chosen != nil {
		l.rows = append(l.rows, *chosen)
	}
	l.rows = append(l.rows, scored...)
	l.rows = append(l.rows, unscored...)
	l.rows = append(l.rows, rest...)
	for i, r := range l.rows {
		l.byNode[r.Node] = i
	}
	return l
}

// Explain lays out attempt a and returns the page of rows opts selects.
// The record's sequence and trace, which the stream carries beside it, are
// the caller's to set.
func Explain(a *record.Attempt, opts Options) *v1alpha1.Explanation {
	l := build(a)
	e := &v1alpha1.Explanation{
		Pod: v1alpha1.ConvertPodRef(a.Pod), Profile: a.Profile, Attempt: a.Attempt, Result: v1alpha1.ConvertResult(a.Result),
		Message: a.Message, FailedPoint: a.FailedPoint, SelectedNode: a.SelectedNode, NominatedNode: a.NominatedNode,
		Timing: v1alpha1.ConvertTiming(a.Timing), Points: v1alpha1.ConvertPoints(a.Points), Nodes: v1alpha1.ConvertNodeCounts(a.Nodes),
		FilterPlugins: []string{}, ScorePlugins: []v1alpha1.ScorePlugin{}, Groups: l.groups,
		DetailsCut: a.DetailsCut, Offset: opts.Offset, Limit: opts.Limit,
	}
	for _, d := range a.Details {
		if d.Node == "" {
			e.Details = append(e.Details, v1alpha1.ConvertDetail(d))
		}
	}
	if e.Groups == nil {
		e.Groups = []v1alpha1.Group{}
	}
	for _, r := range a.RejectionsByPlugin() {
		e.FilterPlugins = append(e.FilterPlugins, r.Plugin)
	}
	slices.Sort(e.FilterPlugins)
	if a.Scores != nil {
		e.ScorePlugins = v1alpha1.ConvertScorePlugins(e.ScorePlugins, a.Scores.Plugins)
		e.ScoringSkipped = a.Scores.SkippedReason
		e.Margin = v1alpha1.ConvertMargin(a.Margin())
	}
	e.Shadows = v1alpha1.ConvertShadowRuns(a)
	rows := l.rows
	if opts.Group != AllGroups {
		rows = nil
		for _, r := range l.rows {
			if r.Group == opts.Group {
				rows = append(rows, r)
			}
		}
	}
	e.TotalRows = len(rows)
	start := min(opts.Offset, len(rows))
	end := len(rows)
	if opts.Limit > 0 {
		end = min(start+opts.Limit, len(rows))
	}
	e.Rows = append([]v1alpha1.NodeRow{}, rows[start:end]...)
	return e
}

// HideNodes removes from e what a caller who may not list nodes must not
// see: the rows, the margin, and the shadows' nodes, ranks, scores and
// victims. What shows of the nodes is then the groups' counts and
// reasons.
func HideNodes(e *v1alpha1.Explanation) {
	e.NodesHidden, e.Rows, e.TotalRows, e.Margin = true, []v1alpha1.NodeRow{}, 0, nil
	for i := range e.Shadows {
		e.Shadows[i].HideNodes()
	}
}

// Node explains the fate of one node; ok is false when the node was not
// part of the attempt.
func Node(a *record.Attempt, node string) (ans *v1alpha1.NodeAnswer, ok bool) {
	l := build(a)
	i, ok := l.byNode[node]
	if !ok {
		// The record lists every node it evaluated; a node it does not list
		// was not evaluated.
		g, found := notEvaluatedGroup(a, node)
		if !found {
			return nil, false
		}
		return &v1alpha1.NodeAnswer{Pod: v1alpha1.ConvertPodRef(a.Pod), Attempt: a.Attempt, Result: v1alpha1.ConvertResult(a.Result), SelectedNode: a.SelectedNode,
			Row: v1alpha1.NodeRow{Node: node, Group: -1, Verdict: record.VerdictNotEvaluated, NotEvaluatedReason: g.NotEvaluatedReason},
			Why: fmt.Sprintf("node %s was not evaluated: %s", node, g.NotEvaluatedReason)}, true
	}
	row := l.rows[i]
	ans = &v1alpha1.NodeAnswer{Pod: v1alpha1.ConvertPodRef(a.Pod), Attempt: a.Attempt, Result: v1alpha1.ConvertResult(a.Result), SelectedNode: a.SelectedNode, Row: row}
	switch {
	case row.Chosen:
		ans.Why = fmt.Sprintf("node %s was chosen", node)
		if row.Total != nil {
			ans.Why += fmt.Sprintf(" with the best total score %d of %d scored nodes", *row.Total, len(l.scores))
		}
		if a.Result != record.ResultScheduled {
			ans.Why += fmt.Sprintf(", but the attempt then failed at %s: %s", a.FailedPoint, a.Message)
		}
	case row.Verdict == record.VerdictRejected:
		ans.Why = fmt.Sprintf("node %s was rejected at Filter by %s", node, row.Plugin)
		if len(row.Reasons) > 0 {
			ans.Why += ": " + strings.Join(row.Reasons, "; ")
		}
		for _, d := range row.Details {
			ans.Why += fmt.Sprintf(" (%s: %s)", d.Plugin, d.Detail)
		}
	case row.Verdict == record.VerdictNotEvaluated:
		ans.Why = fmt.Sprintf("node %s was not evaluated: %s", node, row.NotEvaluatedReason)
	case row.Total != nil:
		ans.Why = fmt.Sprintf("node %s passed every filter but ranked %d of %d with total score %d", node, row.Rank, len(l.scores), *row.Total)
		if c, ok := l.scores[a.SelectedNode]; ok {
			ans.Why += fmt.Sprintf("; the chosen node %s scored %d", a.SelectedNode, c.Total)
			if d := deltas(a.Scores, l.scores[node], c); d != "" {
				ans.Why += " (" + d + ")"
			}
		} else if a.Result != record.ResultScheduled {
			ans.Why += fmt.Sprintf("; the attempt failed at %s: %s", a.FailedPoint, a.Message)
		}
	default:
		ans.Why = fmt.Sprintf("node %s passed every filter", node)
		switch {
		case a.Scores != nil && a.Scores.SkippedReason != "":
			ans.Why += "; scoring was skipped: " + a.Scores.SkippedReason
		case a.Result != record.ResultScheduled:
			ans.Why += fmt.Sprintf(", but the attempt failed at %s: %s", a.FailedPoint, a.Message)
		case a.SelectedNode != "":
			ans.Why += fmt.Sprintf(" but was not scored; %s was chosen", a.SelectedNode)
		}
	}
	return ans, true
}

// deltas lists the plugins where node scored below chosen, largest gap first.
func deltas(s *record.Scores, node, chosen *record.NodeScore) string {
	type d struct {
		plugin string
		diff   int64
	}
	var ds []d
	for i, p := range s.Plugins {
		if i >= len(node.Weighted) || i >= len(chosen.Weighted) {
			break
		}
		if diff := node.Weighted[i] - chosen.Weighted[i]; diff < 0 {
			ds = append(ds, d{p.Name, diff})
		}
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].diff < ds[j].diff })
	parts := make([]string, len(ds))
	for i, x := range ds {
		parts[i] = fmt.Sprintf("%s %d", x.plugin, x.diff)
	}
	return strings.Join(parts, ", ")
}

// notEvaluatedGroup returns the not-evaluated group a node the record does
// not list belongs to: outside a PreFilter result if a PreFilter plugin
// narrowed the nodes without it, else the other.
func notEvaluatedGroup(a *record.Attempt, node string) (record.VerdictGroup, bool) {
	excluded := false
	for _, p := range a.PreFilter {
		if p.NodeNames != nil && !slices.Contains(p.NodeNames, node) {
			excluded = true
		}
	}
	var fallback *record.VerdictGroup
	for i, g := range a.Filter {
		if g.Verdict != record.VerdictNotEvaluated || len(g.Nodes) > 0 {
			continue
		}
		if (g.NotEvaluatedReason == record.NotEvaluatedPreFilterResult) == excluded {
			return g, true
		}
		fallback = &a.Filter[i]
	}
	if fallback != nil {
		return *fallback, true
	}
	return record.VerdictGroup{}, false
}

package build

import (
	"cmp"
	"slices"
	"strings"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
)

// Passed is the verdict of a node every filter accepted.
var Passed = fwk.NewStatus(fwk.Success)

// filterVerdicts groups every node of the snapshot by its Filter verdict,
// each group's nodes sorted by name. It runs for every attempt on the
// background worker, which shares the machine with the scheduler, so it
// walks the snapshot's nodes in their cached name order instead of
// sorting, builds no string per node, and puts the names of every group
// in one array of the exact size.
func filterVerdicts(a *Attempt, arrays *Arrays) ([]record.VerdictGroup, record.NodeCounts) {
	nodes := a.Nodes
	counts := record.NodeCounts{Total: nodes.Len()}
	sc := getScratch(nodes.Len())
	defer putScratch(sc)
	// groupOf[i] is 1 + the group of the snapshot's node i, 0 if it was not
	// evaluated.
	groupOf := sc.groupOf
	g := verdictGroups{passed: -1, last: -1}
	for i, s := range a.Verdicts {
		if s == nil {
			continue
		}
		if s == Passed {
			s = nil
		}
		counts.Evaluated++
		j := g.of(s)
		g.list[j].count++
		groupOf[i] = int32(j) + 1
	}

	// Groups are output in the order of their first node by name, then
	// ordered by rank.
	out := make([]record.VerdictGroup, 0, len(g.list)+2)
	arrays.names = resize(arrays.names, counts.Evaluated)
	names := arrays.names
	notEvaluated := notEvaluatedReason(a, counts.Evaluated)
	narrowed := notEvaluated == record.NotEvaluatedEnoughFeasible && a.PreFilterResult != nil && !a.PreFilterResult.AllNodes()
	notEvaluatedGroup, outsidePreFilterResult := -1, -1
	for _, i := range nodes.ByName() {
		j := groupOf[i]
		if j == 0 {
			// Not evaluated: counted, not named.
			at, reason := &notEvaluatedGroup, notEvaluated
			if narrowed && !a.PreFilterResult.NodeNames.Has(nodes.Name(i)) {
				at, reason = &outsidePreFilterResult, record.NotEvaluatedPreFilterResult
			}
			if *at < 0 {
				*at = len(out)
				out = append(out, record.VerdictGroup{Verdict: record.VerdictNotEvaluated, NotEvaluatedReason: reason})
			}
			out[*at].Count++
			continue
		}
		grp := &g.list[j-1]
		if grp.out < 0 {
			grp.out = len(out)
			out = append(out, grp.record(names[:0:grp.count]))
			names = names[grp.count:]
		}
		o := &out[grp.out]
		o.Count++
		o.Nodes = append(o.Nodes, nodes.Name(i))
	}
	slices.SortStableFunc(out, func(x, y record.VerdictGroup) int { return cmp.Compare(x.Rank(), y.Rank()) })
	return out, counts
}

// notEvaluatedReason says why the nodes without a verdict were not
// filtered, evaluated nodes having one.
func notEvaluatedReason(a *Attempt, evaluated int) string {
	switch {
	case a.PreFilterStatus != nil && !a.PreFilterStatus.IsSuccess():
		return record.NotEvaluatedPreFilterRejected
	case a.Pod.Status.NominatedNodeName != "" && a.Feasible == 1 && evaluated == 1:
		return record.NotEvaluatedNominatedNodeFit
	}
	return record.NotEvaluatedEnoughFeasible
}

// verdictGroups are the distinct Filter verdicts of an attempt: passed, and
// each distinct rejection.
type verdictGroups struct {
	list     []verdictGroup
	passed   int // -1 until a node passes
	last     int // the last rejection found, -1 until one is
	rejected map[verdictKey]int
}

type verdictGroup struct {
	status *fwk.Status // nil: passed
	count  int
	out    int // place in the output, -1 until the group's first node by name
}

// verdictKey identifies a group of identical Filter rejections.
type verdictKey struct {
	plugin, reasons string
	code            fwk.Code
}

// of returns the group of a verdict. Rejections come from the plugins as a
// new status per node, mostly with the reasons of the rejection before, so
// that one is compared first.
func (g *verdictGroups) of(s *fwk.Status) int {
	if s == nil {
		if g.passed < 0 {
			g.passed = g.add(nil)
		}
		return g.passed
	}
	if g.last >= 0 && sameRejection(g.list[g.last].status, s) {
		return g.last
	}
	key := verdictKey{plugin: s.Plugin(), code: s.Code()}
	if r := s.Reasons(); len(r) == 1 {
		key.reasons = r[0]
	} else {
		key.reasons = strings.Join(r, "\x00")
	}
	j, ok := g.rejected[key]
	if !ok {
		if g.rejected == nil {
			g.rejected = map[verdictKey]int{}
		}
		j = g.add(s)
		g.rejected[key] = j
	}
	g.last = j
	return j
}

func (g *verdictGroups) add(s *fwk.Status) int {
	g.list = append(g.list, verdictGroup{status: s, out: -1})
	return len(g.list) - 1
}

// sameRejection reports whether two rejections belong in one group.
func sameRejection(x, y *fwk.Status) bool {
	return x == y || (x.Code() == y.Code() && x.Plugin() == y.Plugin() && slices.Equal(x.Reasons(), y.Reasons()))
}

// record returns the group's record, which lists its nodes in names.
func (g *verdictGroup) record(names []string) record.VerdictGroup {
	if g.status == nil {
		return record.VerdictGroup{Verdict: record.VerdictPassed, Nodes: names}
	}
	s := g.status
	return record.VerdictGroup{Verdict: record.VerdictRejected, Plugin: s.Plugin(), Code: s.Code().String(), Reasons: Reasons(s), Nodes: names}
}

package build

import (
	"cmp"
	"slices"
	"strings"

	"github.com/schedscope/schedscope/pkg/record"
)

// scoreBreakdown returns the scored nodes, highest total first, with each
// score plugin's raw, normalized and weighted score; nil when the attempt
// did not score, unless scoring was skipped for its single feasible node.
func scoreBreakdown(a *Attempt, arrays *Arrays) *record.Scores {
	if !a.Scored {
		if a.Result == record.ResultScheduled && a.Feasible == 1 {
			return &record.Scores{SkippedReason: record.ScoringSkippedSingleNode}
		}
		return nil
	}
	plugins := a.ScorePlugins
	index := pluginIndex{byName: make(map[string]int, len(plugins))}
	for i, p := range plugins {
		index.byName[p.Name] = i
	}
	// Highest total first, then by name; node names are unique, so the
	// order is total. The small keys are sorted, not the nodes' scores, and
	// names are compared by their place in the snapshot's name order when
	// every scored node is in the snapshot.
	sc := getScratch(0)
	defer putScratch(sc)
	order := sc.order[:0]
	ranked := true
	for k, ns := range a.Scores {
		key := scoreKey{total: ns.TotalScore, at: int32(k)}
		if i, ok := a.Nodes.Find(ns.Name); ok {
			key.rank = a.Nodes.Rank(i)
		} else {
			ranked = false
		}
		order = append(order, key)
	}
	sc.order = order
	slices.SortFunc(order, func(x, y scoreKey) int {
		if c := cmp.Compare(y.total, x.total); c != 0 {
			return c
		}
		if ranked {
			return cmp.Compare(x.rank, y.rank)
		}
		return strings.Compare(a.Scores[x.at].Name, a.Scores[y.at].Name)
	})
	// One backing array for every node's raw, normalized and weighted
	// scores: a 5000-node attempt scores hundreds of nodes.
	p := len(plugins)
	arrays.scores = resize(arrays.scores, len(a.Scores))
	arrays.values = resize(arrays.values, 3*p*len(a.Scores))
	out := &record.Scores{Plugins: plugins, Nodes: arrays.scores}
	values := arrays.values
	for k, key := range order {
		ns := &a.Scores[key.at]
		v := values[3*p*k : 3*p*(k+1)]
		node := &out.Nodes[k]
		*node = record.NodeScore{
			Node:       ns.Name,
			Raw:        v[:p:p],
			Normalized: v[p : 2*p : 2*p],
			Weighted:   v[2*p : 3*p : 3*p],
			Total:      ns.TotalScore,
		}
		raw := nodeRawScores(ns)
		for j, s := range raw {
			if i, ok := index.of(&index.raw, j, s.Name); ok {
				node.Raw[i] = s.Score
			}
		}
		for j, s := range ns.Scores {
			i, ok := index.of(&index.weighted, j, s.Name)
			if !ok {
				node.Extenders += s.Score
				continue
			}
			node.Weighted[i] = s.Score
			if w := plugins[i].Weight; w != 0 {
				node.Normalized[i] = s.Score / w
			}
		}
		if !FrameworkKeepsRawScores {
			rawScoresKept(a, node, int(key.at))
		}
	}
	return out
}

// rawScoresKept sets node's raw scores, the at-th scored node's, from
// KeptRawScores; a plugin without NormalizeScore scores as it is
// normalized.
func rawScoresKept(a *Attempt, node *record.NodeScore, at int) {
	for i, p := range a.ScorePlugins {
		node.Raw[i] = node.Normalized[i]
		if kept, ok := a.KeptRawScores[p.Name]; ok && at < len(kept) && kept[at].Name == node.Node {
			node.Raw[i] = kept[at].Score
		}
	}
}

// scoreKey orders the scored nodes: rank is the node's place in the
// snapshot's name order, at its place in the framework's list.
type scoreKey struct {
	total    int64
	rank, at int32
}

// pluginIndex finds the score plugin of each of a node's scores. The
// framework lists every node's scores in the same plugin order, so the
// position of the name seen at each place is remembered, and the name
// looked up only when it differs.
type pluginIndex struct {
	byName        map[string]int // score plugin name to position
	raw, weighted []seenPlugin   // by place in a node's RawScores and Scores
}

type seenPlugin struct {
	name string
	at   int // -1: not a score plugin (an extender)
}

func (x *pluginIndex) of(seen *[]seenPlugin, place int, name string) (int, bool) {
	if place < len(*seen) && (*seen)[place].name == name {
		at := (*seen)[place].at
		return at, at >= 0
	}
	at, ok := x.byName[name]
	if !ok {
		at = -1
	}
	for len(*seen) <= place {
		*seen = append(*seen, seenPlugin{at: -1})
	}
	(*seen)[place] = seenPlugin{name: name, at: at}
	return at, ok
}

package store

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// Tally counts rejections by key for a RejectionQuery. Time buckets are
// kept sparse and laid out only for the keys the query's limit keeps: a pod
// rejected on thousands of nodes does not cost a series per node.
type Tally struct {
	q       RejectionQuery
	buckets int
	counts  map[string]*keyCount
}

type keyCount struct {
	v1alpha1.RejectionCount
	// inBucket holds the attempts and nodes counted in each bucket.
	inBucket map[int][2]int64
}

// NewTally returns a tally for q, or an error naming what is wrong with q.
func NewTally(q RejectionQuery) (*Tally, error) {
	if q.By != v1alpha1.ByPlugin && q.By != v1alpha1.ByNode {
		return nil, fmt.Errorf("unknown grouping %q", q.By)
	}
	if q.Step > 0 && q.Buckets() == 0 {
		return nil, fmt.Errorf("a step needs a window: since %v, until %v", q.Since, q.Until)
	}
	return &Tally{q: q, buckets: q.Buckets(), counts: map[string]*keyCount{}}, nil
}

// AddRow counts one stored rejection row: plugin rejected nodes (names,
// compressed as RejectionRow.Names, are decoded only when counting by
// node) in an attempt finished at finished (Unix nanoseconds).
func (t *Tally) AddRow(plugin string, finished, nodes int64, names []byte) error {
	if t.q.By == v1alpha1.ByPlugin {
		t.add(plugin, "", finished, nodes)
		return nil
	}
	decoded, err := DecodeNodes(names)
	for _, n := range decoded {
		// A node gets one verdict per attempt.
		t.add(n, plugin, finished, 1)
	}
	return err
}

// add counts one attempt that rejected nodes under key; plugin, when set,
// is counted in the key's Plugins.
func (t *Tally) add(key, plugin string, finished, nodes int64) {
	c := t.counts[key]
	if c == nil {
		c = &keyCount{RejectionCount: v1alpha1.RejectionCount{Key: key}}
		t.counts[key] = c
	}
	c.Attempts++
	c.Nodes += nodes
	if plugin != "" {
		if c.Plugins == nil {
			c.Plugins = map[string]int64{}
		}
		c.Plugins[plugin] += nodes
	}
	if t.buckets > 0 {
		if c.inBucket == nil {
			c.inBucket = map[int][2]int64{}
		}
		b := min(int((finished-t.q.Since.UnixNano())/int64(t.q.Step)), t.buckets-1)
		n := c.inBucket[b]
		c.inBucket[b] = [2]int64{n[0] + 1, n[1] + nodes}
	}
}

// Result returns the counts, most nodes first, up to the query's limit.
func (t *Tally) Result() []v1alpha1.RejectionCount {
	kept := make([]*keyCount, 0, len(t.counts))
	for _, c := range t.counts {
		kept = append(kept, c)
	}
	slices.SortFunc(kept, func(a, b *keyCount) int {
		return cmp.Or(cmp.Compare(b.Nodes, a.Nodes), strings.Compare(a.Key, b.Key))
	})
	if t.q.Limit > 0 && len(kept) > t.q.Limit {
		kept = kept[:t.q.Limit]
	}
	out := make([]v1alpha1.RejectionCount, len(kept))
	for i, c := range kept {
		out[i] = c.RejectionCount
		if t.buckets == 0 {
			continue
		}
		out[i].Series = make([]v1alpha1.RejectionBucket, t.buckets)
		for b := range out[i].Series {
			n := c.inBucket[b]
			out[i].Series[b] = v1alpha1.RejectionBucket{Start: t.q.Since.Add(time.Duration(b) * t.q.Step).UTC(), Attempts: n[0], Nodes: n[1]}
		}
	}
	return out
}

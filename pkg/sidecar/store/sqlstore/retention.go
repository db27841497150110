package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// Querier is a database, one of its connections or a transaction.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Measure is what a fair share of retention counts: attempts or their
// stored bytes.
type Measure int

const (
	// Attempts counts stored attempts.
	Attempts Measure = iota
	// Bytes counts the attempts' stored record bytes (column size).
	Bytes
)

// holding is what one namespace of a cluster holds.
type holding struct {
	namespace       string
	attempts, bytes int64
}

// of returns h's amount in m.
func (h holding) of(m Measure) int64 {
	if m == Bytes {
		return h.bytes
	}
	return h.attempts
}

// holdings returns what each of cluster's namespaces holds.
func holdings(ctx context.Context, q Querier, d *Dialect, cluster string) ([]holding, error) {
	rows, err := q.QueryContext(ctx, d.bind(`SELECT namespace, COUNT(*), COALESCE(SUM(size), 0) FROM attempts WHERE cluster = ? GROUP BY namespace`), cluster)
	if err != nil {
		return nil, fmt.Errorf("reading what each namespace holds: %w", err)
	}
	defer rows.Close()
	var out []holding
	for rows.Next() {
		var h holding
		if err := rows.Scan(&h.namespace, &h.attempts, &h.bytes); err != nil {
			return nil, fmt.Errorf("reading what each namespace holds: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// FairShare returns the max-min fair share of budget among amounts: the
// largest level such that the amounts, each cut to level, sum to at most
// budget. Amounts under the level are kept whole; the rest of the budget
// is split evenly among the larger ones. It is the largest amount when
// they all fit, and 0 when budget is not positive.
func FairShare(amounts []int64, budget int64) int64 {
	sorted := slices.Sorted(slices.Values(amounts))
	for i, a := range sorted {
		// The amounts before i are kept whole; the len-i from i on
		// share what is left.
		share := budget / int64(len(sorted)-i)
		if a > share {
			return max(share, 0)
		}
		budget -= a
	}
	if len(sorted) == 0 {
		return 0
	}
	return sorted[len(sorted)-1]
}

// Cutoff is the newest attempt of a namespace beyond its share: it and
// every older attempt of the namespace go.
type Cutoff struct {
	Namespace string
	ID        int64
}

// FairCutoffs returns, for each of cluster's namespaces holding more than
// the fair share of budget in m (see FairShare), the cutoff that keeps its
// newest attempts within the share. Deleting up to the cutoffs leaves the
// cluster within budget, and deletes nothing of a namespace within its
// share.
func FairCutoffs(ctx context.Context, q Querier, d *Dialect, cluster string, m Measure, budget int64) ([]Cutoff, error) {
	hs, err := holdings(ctx, q, d, cluster)
	if err != nil {
		return nil, err
	}
	amounts := make([]int64, len(hs))
	for i, h := range hs {
		amounts[i] = h.of(m)
	}
	return cutoffs(ctx, q, d, cluster, hs, m, FairShare(amounts, budget))
}

// cutoffs returns, for each namespace of hs holding more than share in m,
// the cutoff that keeps its newest attempts within share.
func cutoffs(ctx context.Context, q Querier, d *Dialect, cluster string, hs []holding, m Measure, share int64) ([]Cutoff, error) {
	// Attempts: the newest beyond the share's count. Bytes: the newest
	// at which the namespace's bytes, newest first, exceed the share.
	cutoff := d.bind(`SELECT id FROM attempts WHERE cluster = ? AND namespace = ? ORDER BY id DESC LIMIT 1 OFFSET ?`)
	if m == Bytes {
		cutoff = d.bind(`SELECT id FROM (
			SELECT id, SUM(size) OVER (ORDER BY id DESC) AS newer FROM attempts WHERE cluster = ? AND namespace = ?) t
			WHERE newer > ? ORDER BY id DESC LIMIT 1`)
	}
	var out []Cutoff
	for _, h := range hs {
		if h.of(m) <= share {
			continue
		}
		c := Cutoff{Namespace: h.namespace}
		err := q.QueryRowContext(ctx, cutoff, cluster, h.namespace, share).Scan(&c.ID)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("finding where namespace %q exceeds its share: %w", h.namespace, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// ByteBudget returns the record bytes (column size) a cluster holding
// clusterBytes of them may keep, so that storage measured at used, of
// which all the clusters' records take allBytes, comes back a tenth
// under bound: the cluster gives up its excess in proportion to all the
// records. Sizes and overheads vary, so a caller measures again after
// deleting.
func ByteBudget(used, bound, allBytes, clusterBytes int64) int64 {
	excess := used - bound*9/10
	if excess <= 0 || used <= 0 {
		return clusterBytes
	}
	// Ceiling of allBytes × excess / used, in floating point: the
	// product overflows int64 for stores of several GiB.
	remove := int64(float64(allBytes)*float64(excess)/float64(used)) + 1
	return max(0, clusterBytes-remove)
}

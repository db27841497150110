package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlstore"
)

// pruneLock is the first advisory lock key under which one process at a
// time applies retention to a cluster's records in a shared database; the
// second is the hash of the cluster's name.
const pruneLock = 0x5c4ed5c1

// deleteBatch is how many attempts one retention transaction deletes: small
// enough that it holds row locks for milliseconds, large enough that a
// minute's pass keeps up with a busy scheduler.
const deleteBatch = 500

// Prune implements store.Store: of the store's cluster's attempts, it
// removes those older than MaxAge, then the oldest beyond each
// namespace's fair share of MaxAttempts and beyond
// MaxAttemptsPerNamespace in each namespace, with their index rows; then,
// while the cluster's records and rejection index exceed MaxDiskBytes, the
// oldest of the namespaces over their fair share of the record bytes left
// after giving up the excess. A fair share is max-min fair
// (sqlstore.FairShare): a namespace under it keeps every attempt, the
// others their newest within it. Other clusters' records are left alone:
// each cluster's sidecar applies its own retention. Deletes go in batches
// of deleteBatch attempts, each its own transaction, and lock only the
// rows they delete: ingest, which inserts new rows, never waits for
// retention. When another process is applying retention to the cluster's
// records, Prune does nothing.
func (s *Store) Prune(ctx context.Context, now time.Time) (removed int, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("pruning: %w", err)
	}
	defer conn.Close()
	var locked bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, pruneLock, s.cluster).Scan(&locked); err != nil {
		return 0, fmt.Errorf("pruning: taking the retention lock: %w", err)
	}
	if !locked {
		return 0, nil
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext($2))`, pruneLock, s.cluster); err != nil {
			// The lock goes with the connection, which a bad
			// connection error closes.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	r, c := s.retention, s.cluster
	add := func(n int, err error) error {
		removed += n
		return err
	}
	if err := add(sqlstore.RemoveSilentClusters(ctx, conn, &dialect, c, now, r.RemoveSilentClustersAfter)); err != nil {
		return removed, err
	}
	if r.MaxAge > 0 {
		if err := add(deleteBatches(ctx, conn, `cluster = $1 AND finished < $2`, c, now.Add(-r.MaxAge).UnixNano())); err != nil {
			return removed, err
		}
	}
	if r.MaxAttempts > 0 {
		if err := add(s.deleteBeyondFairShare(ctx, conn, sqlstore.Attempts, r.MaxAttempts)); err != nil {
			return removed, err
		}
	}
	if r.MaxAttemptsPerNamespace > 0 {
		if err := add(s.pruneNamespaces(ctx, conn, r.MaxAttemptsPerNamespace)); err != nil {
			return removed, err
		}
	}
	if r.MaxDiskBytes > 0 {
		if err := add(s.pruneBytes(ctx, conn, r.MaxDiskBytes)); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// pruneNamespaces deletes the oldest attempts beyond bound of each of the
// cluster's namespaces.
func (s *Store) pruneNamespaces(ctx context.Context, conn *sql.Conn, bound int64) (int, error) {
	namespaces, err := crowdedNamespaces(ctx, conn, s.cluster, bound)
	if err != nil {
		return 0, fmt.Errorf("pruning by namespace: %w", err)
	}
	removed := 0
	for _, ns := range namespaces {
		n, err := deleteUpTo(ctx, conn, `SELECT id FROM attempts WHERE cluster = $3 AND namespace = $2 ORDER BY id DESC OFFSET $1 LIMIT 1`,
			`cluster = $3 AND namespace = $2`, bound, ns, s.cluster)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// crowdedNamespaces returns the namespaces of cluster with more than bound
// attempts.
func crowdedNamespaces(ctx context.Context, conn *sql.Conn, cluster string, bound int64) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT namespace FROM attempts WHERE cluster = $2 GROUP BY namespace HAVING COUNT(*) > $1`, bound, cluster)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, err
		}
		out = append(out, ns)
	}
	return out, rows.Err()
}

// RetainedBytes returns the bytes Retention.MaxDiskBytes bounds: the
// store's cluster's records and rejection index. PostgreSQL keeps the
// space of deleted rows for new ones rather than giving it back, so its
// files stay near their high-water mark (Stats().DiskBytes).
func (s *Store) RetainedBytes(ctx context.Context) (int64, error) {
	return retainedBytes(ctx, s.db, s.cluster)
}

// querier is a database or one of its connections.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func retainedBytes(ctx context.Context, q querier, cluster string) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT (SELECT COALESCE(SUM(size), 0) FROM attempts WHERE cluster = $1)
		+ (SELECT COALESCE(SUM(octet_length(node_names)), 0) FROM rejections WHERE cluster = $1)`, cluster).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reading the stored bytes: %w", err)
	}
	return n, nil
}

// pruneBytes deletes the oldest attempts of the namespaces over their fair
// share of the record bytes the cluster keeps after giving up its excess
// (aiming a tenth below the bound), while the retained bytes exceed bound;
// sizes vary, so a few rounds may be needed.
func (s *Store) pruneBytes(ctx context.Context, conn *sql.Conn, bound int64) (int, error) {
	removed := 0
	for range 4 {
		used, err := retainedBytes(ctx, conn, s.cluster)
		if err != nil || used <= bound {
			return removed, err
		}
		var records int64
		if err := conn.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM attempts WHERE cluster = $1`, s.cluster).Scan(&records); err != nil {
			return removed, fmt.Errorf("pruning by size: %w", err)
		}
		n, err := s.deleteBeyondFairShare(ctx, conn, sqlstore.Bytes, sqlstore.ByteBudget(used, bound, records, records))
		removed += n
		if err != nil || n == 0 {
			return removed, err
		}
	}
	return removed, nil
}

// deleteBeyondFairShare deletes the oldest attempts of the cluster's
// namespaces over their fair share of budget in m.
func (s *Store) deleteBeyondFairShare(ctx context.Context, conn *sql.Conn, m sqlstore.Measure, budget int64) (int, error) {
	cutoffs, err := sqlstore.FairCutoffs(ctx, conn, &dialect, s.cluster, m, budget)
	if err != nil {
		return 0, fmt.Errorf("pruning: %w", err)
	}
	removed := 0
	for _, cut := range cutoffs {
		n, err := deleteBatches(ctx, conn, `cluster = $2 AND namespace = $3 AND id <= $1`, cut.ID, s.cluster, cut.Namespace)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// deleteUpTo deletes the attempts matching where whose id is at most the
// one cutoff selects; cutoff and where share args, cutoff's first.
func deleteUpTo(ctx context.Context, conn *sql.Conn, cutoff, where string, args ...any) (int, error) {
	var id int64
	err := conn.QueryRowContext(ctx, cutoff, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pruning: %w", err)
	}
	return deleteBatches(ctx, conn, where+` AND id <= $1`, append([]any{id}, args[1:]...)...)
}

// deleteBatches deletes the attempts matching where, with their rejection
// rows, their shadow runs and the pods whose latest attempt they are,
// deleteBatch attempts per transaction.
func deleteBatches(ctx context.Context, conn querier, where string, args ...any) (removed int, err error) {
	stmt := fmt.Sprintf(`WITH deleted AS (
			DELETE FROM attempts WHERE id IN (SELECT id FROM attempts WHERE %s LIMIT %d) RETURNING id),
		rejections AS (DELETE FROM rejections WHERE attempt_id IN (SELECT id FROM deleted)),
		shadows AS (DELETE FROM shadow_runs WHERE attempt_id IN (SELECT id FROM deleted)),
		pods AS (DELETE FROM pods WHERE latest_id IN (SELECT id FROM deleted))
		SELECT COUNT(*) FROM deleted`, where, deleteBatch)
	for {
		var n int
		if err := conn.QueryRowContext(ctx, stmt, args...).Scan(&n); err != nil {
			return removed, fmt.Errorf("pruning: %w", err)
		}
		removed += n
		if n < deleteBatch {
			return removed, nil
		}
	}
}

// DeleteNamespace implements store.Store.
func (s *Store) DeleteNamespace(ctx context.Context, namespace string) (int, error) {
	n, err := deleteBatches(ctx, s.db, `cluster = $1 AND namespace = $2`, s.cluster, namespace)
	if err != nil {
		return n, fmt.Errorf("deleting the attempts of namespace %q: %w", namespace, err)
	}
	return n, nil
}

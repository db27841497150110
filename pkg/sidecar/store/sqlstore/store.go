package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/stream"
)

// Store answers store.Writer and store.Reader from a database that Migrate
// brought to the newest schema. The dialect's package adds the rest of
// store.Store: retention and deleting namespaces. The Writer's statements
// run on db, the Reader's queries (but Cursor, the follower's) on reads:
// the writer never waits for a connection behind readers.
type Store struct {
	db      *sql.DB
	reads   *sql.DB
	d       *Dialect
	cluster string
	// allClusters lets the Reader answer every cluster's records; without
	// it, it reads only cluster's.
	allClusters bool
	writes      sync.Locker
	disk        func(context.Context) (int64, error)
	ins         inserts
}

// Config is what a Store needs beside its database and dialect.
type Config struct {
	// Cluster is the cluster whose records the store writes.
	Cluster string
	// AllClusters lets the Reader answer every cluster's records; without
	// it, every query reads Cluster's only, whatever cluster it names.
	AllClusters bool
	// Writes, when set, serializes the store's writers: Append holds it
	// for its transaction.
	Writes sync.Locker
	// DiskBytes returns what the database holds on disk, for Stats.
	DiskBytes func(context.Context) (int64, error)
	// Reads is the pool the Reader's queries run on, closed with the
	// store; nil means the writer's.
	Reads *sql.DB
}

// New returns the store of c.Cluster's records in db, in dialect d.
func New(ctx context.Context, db *sql.DB, d *Dialect, c Config) (*Store, error) {
	s := &Store{db: db, reads: c.Reads, d: d, cluster: c.Cluster, allClusters: c.AllClusters, writes: c.Writes, disk: c.DiskBytes}
	if s.reads == nil {
		s.reads = db
	}
	if err := s.ins.prepare(ctx, db, d); err != nil {
		s.ins.close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.ins.close()
	var err error
	if s.reads != s.db {
		err = s.reads.Close()
	}
	return errors.Join(s.db.Close(), err)
}

// Cursor implements store.Writer.
func (s *Store) Cursor(ctx context.Context) (v1alpha1.Cursor, error) {
	var c v1alpha1.Cursor
	var seq, lost int64
	err := s.db.QueryRowContext(ctx, s.d.bind(`SELECT epoch, seq, lost FROM cursors WHERE cluster = ?`), s.cluster).Scan(&c.Epoch, &seq, &lost)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading the cursor of cluster %q: %w", s.cluster, err)
	}
	c.Seq, c.Lost = uint64(seq), uint64(lost)
	return c, nil
}

// Append implements store.Writer.
func (s *Store) Append(ctx context.Context, cursor v1alpha1.Cursor, records []stream.Record) error {
	// Encode outside the lock and the transaction: it is the expensive part.
	rows, err := store.EncodeRows(s.cluster, cursor.Epoch, records)
	if err != nil {
		return err
	}
	if s.writes != nil {
		s.writes.Lock()
		defer s.writes.Unlock()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("starting transaction: %w", err)
	}
	defer tx.Rollback()
	w := s.ins.in(ctx, tx, s.cluster)
	for _, r := range rows {
		if err := w.insert(ctx, cursor.Epoch, r); err != nil {
			return err
		}
	}
	if _, err := w.cursor.ExecContext(ctx, s.cluster, cursor.Epoch, int64(cursor.Seq), int64(cursor.Lost)); err != nil {
		return fmt.Errorf("storing the cursor of cluster %q: %w", s.cluster, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing %d records: %w", len(rows), err)
	}
	return nil
}

// query builds a statement from clauses with ? parameters.
type query struct {
	sql  strings.Builder
	args []any
	// scope is the only cluster the query may read; nil lets it read every
	// cluster.
	scope *string
}

// query returns a query of the clusters the Reader may read.
func (s *Store) query() *query {
	if s.allClusters {
		return &query{}
	}
	return &query{scope: &s.cluster}
}

// add appends a clause and its parameters.
func (q *query) add(clause string, args ...any) {
	q.sql.WriteString(clause)
	q.args = append(q.args, args...)
}

func (q *query) wherePod(pod store.PodSelector) error {
	switch {
	case pod.UID != "":
		q.add(` WHERE uid = ?`, pod.UID)
	case pod.Namespace != "" && pod.Name != "":
		q.add(` WHERE namespace = ? AND name = ?`, pod.Namespace, pod.Name)
	default:
		return errors.New("a pod is selected by UID or by namespace and name")
	}
	q.inCluster("cluster", pod.Cluster)
	return nil
}

// inCluster keeps the rows of cluster in column; empty keeps every
// cluster the query may read. A cluster outside its scope keeps none.
func (q *query) inCluster(column, cluster string) {
	switch {
	case q.scope != nil && cluster != "" && cluster != *q.scope:
		q.add(` AND false`)
	case q.scope != nil:
		q.add(` AND `+column+` = ?`, *q.scope)
	case cluster != "":
		q.add(` AND `+column+` = ?`, cluster)
	}
}

// inNamespaces keeps the rows of namespaces in column; nil keeps all.
func (q *query) inNamespaces(column string, namespaces []string) {
	switch {
	case namespaces == nil:
	case len(namespaces) == 0:
		q.add(` AND false`)
	default:
		q.add(` AND ` + column + ` IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(namespaces)), ", ") + `)`)
		for _, ns := range namespaces {
			q.args = append(q.args, ns)
		}
	}
}

func (q *query) limit(n int) {
	if n > 0 {
		q.add(` LIMIT ?`, n)
	}
}

// each runs q on the readers' pool and calls row for each of its rows.
func (s *Store) each(ctx context.Context, q *query, row func(*sql.Rows) error) error {
	rows, err := s.reads.QueryContext(ctx, s.d.bind(q.sql.String()), q.args...)
	if err != nil {
		return s.readErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return s.readErr(ctx, err)
		}
	}
	return s.readErr(ctx, rows.Err())
}

// readErr wraps store.ErrQueryTimeout around err when the query it ended
// ran past ctx's deadline or the server's statement timeout.
func (s *Store) readErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) || (s.d.TimedOut != nil && s.d.TimedOut(err)) {
		return fmt.Errorf("%w: %w", store.ErrQueryTimeout, err)
	}
	return err
}

// scanSummary scans an attempt's stored summary and the repeats folded
// into it, after the columns before.
func scanSummary(rows *sql.Rows, before ...any) (v1alpha1.AttemptSummary, error) {
	var summary []byte
	var repeats, lastAttempt int
	var lastFinished int64
	if err := rows.Scan(append(before, &summary, &repeats, &lastAttempt, &lastFinished)...); err != nil {
		return v1alpha1.AttemptSummary{}, err
	}
	return store.DecodeSummary(summary, repeats, lastAttempt, lastFinished)
}

// Attempts implements store.Reader.
func (s *Store) Attempts(ctx context.Context, pod store.PodSelector, limit int) ([]v1alpha1.AttemptSummary, error) {
	q := s.query()
	q.add(`SELECT summary, repeats, last_attempt, last_finished FROM attempts`)
	if err := q.wherePod(pod); err != nil {
		return nil, err
	}
	q.add(` ORDER BY id DESC`)
	q.limit(limit)
	var out []v1alpha1.AttemptSummary
	err := s.each(ctx, q, func(rows *sql.Rows) error {
		sum, err := scanSummary(rows)
		out = append(out, sum)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing attempts: %w", err)
	}
	return out, nil
}

// Attempt implements store.Reader.
func (s *Store) Attempt(ctx context.Context, pod store.PodSelector, number int) (*stream.Record, error) {
	q := s.query()
	q.add(`SELECT summary, data FROM attempts`)
	if err := q.wherePod(pod); err != nil {
		return nil, err
	}
	if number > 0 {
		// A folded repeat is answered with the attempt it was folded into.
		q.add(` AND attempt <= ? AND (attempt = ? OR last_attempt >= ?)`, number, number, number)
	}
	q.add(` ORDER BY id DESC LIMIT 1`)
	var summary, data []byte
	if err := s.reads.QueryRowContext(ctx, s.d.bind(q.sql.String()), q.args...).Scan(&summary, &data); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, fmt.Errorf("reading attempt: %w", s.readErr(ctx, err))
	}
	return store.DecodeRecord(summary, data)
}

// Pods implements store.Reader.
func (s *Store) Pods(ctx context.Context, opts store.PodListOptions) ([]v1alpha1.PodStatus, error) {
	q := s.query()
	q.add(`SELECT p.first_seen, a.summary, a.repeats, a.last_attempt, a.last_finished
		FROM pods p JOIN attempts a ON a.id = p.latest_id WHERE true`)
	if opts.PendingOnly {
		q.add(` AND p.result <> ?`, string(record.ResultScheduled))
	}
	q.inCluster("p.cluster", opts.Cluster)
	q.inNamespaces("p.namespace", opts.Namespaces)
	q.add(` ORDER BY p.finished DESC`)
	q.limit(opts.Limit)
	out := []v1alpha1.PodStatus{}
	err := s.each(ctx, q, func(rows *sql.Rows) error {
		var firstSeen int64
		latest, err := scanSummary(rows, &firstSeen)
		if err != nil {
			return err
		}
		out = append(out, v1alpha1.PodStatus{Cluster: latest.Cluster, Pod: latest.Pod, Profile: latest.Profile, FirstSeen: time.Unix(0, firstSeen).UTC(), Latest: latest})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	return out, nil
}

// Namespaces implements store.Reader.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	var q query
	q.add(`SELECT DISTINCT namespace FROM pods WHERE cluster = ? ORDER BY namespace`, s.cluster)
	var out []string
	err := s.each(ctx, &q, func(rows *sql.Rows) error {
		var ns string
		err := rows.Scan(&ns)
		out = append(out, ns)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	return out, nil
}

// Rejections implements store.Reader.
func (s *Store) Rejections(ctx context.Context, rq store.RejectionQuery) ([]v1alpha1.RejectionCount, error) {
	t, err := store.NewTally(rq)
	if err != nil {
		return nil, err
	}
	names := "NULL"
	if rq.By == v1alpha1.ByNode {
		names = "node_names"
	}
	q := s.query()
	q.add(`SELECT plugin, finished, nodes, ` + names + ` FROM rejections WHERE true`)
	if !rq.Since.IsZero() {
		q.add(` AND finished >= ?`, rq.Since.UnixNano())
	}
	if !rq.Until.IsZero() {
		q.add(` AND finished < ?`, rq.Until.UnixNano())
	}
	q.inCluster("cluster", rq.Cluster)
	q.inNamespaces("namespace", rq.Namespaces)
	err = s.each(ctx, q, func(rows *sql.Rows) error {
		var plugin string
		var finished, nodes int64
		var names []byte
		if err := rows.Scan(&plugin, &finished, &nodes, &names); err != nil {
			return err
		}
		return t.AddRow(plugin, finished, nodes, names)
	})
	if err != nil {
		return nil, fmt.Errorf("counting rejections: %w", err)
	}
	return t.Result(), nil
}

// ShadowSummary implements store.Reader.
func (s *Store) ShadowSummary(ctx context.Context, sq store.ShadowQuery) (v1alpha1.ShadowSummary, error) {
	t := store.NewShadowTally(sq)
	q := s.query()
	q.add(`SELECT outcome, not_compared_reason, plugin, COUNT(*) FROM shadow_runs WHERE shadow = ?`, sq.Shadow)
	if !sq.Since.IsZero() {
		q.add(` AND finished >= ?`, sq.Since.UnixNano())
	}
	if !sq.Until.IsZero() {
		q.add(` AND finished < ?`, sq.Until.UnixNano())
	}
	q.inCluster("cluster", sq.Cluster)
	q.inNamespaces("namespace", sq.Namespaces)
	q.add(` GROUP BY outcome, not_compared_reason, plugin`)
	err := s.each(ctx, q, func(rows *sql.Rows) error {
		var outcome, reason, plugin string
		var n int64
		if err := rows.Scan(&outcome, &reason, &plugin, &n); err != nil {
			return err
		}
		t.Add(record.ShadowOutcome(outcome), reason, plugin, n)
		return nil
	})
	if err != nil {
		return v1alpha1.ShadowSummary{}, fmt.Errorf("counting the runs of shadow %q: %w", sq.Shadow, err)
	}
	return t.Result(), nil
}

// ShadowOf implements store.Reader.
func (s *Store) ShadowOf(ctx context.Context, cluster, shadow string) (string, error) {
	var live string
	q := s.query()
	q.add(`SELECT profile FROM shadow_runs WHERE shadow = ? AND cluster = ?`, shadow, cluster)
	q.inCluster("cluster", cluster)
	q.add(` ORDER BY finished DESC LIMIT 1`)
	err := s.reads.QueryRowContext(ctx, s.d.bind(q.sql.String()), q.args...).Scan(&live)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the live profile of shadow %q: %w", shadow, s.readErr(ctx, err))
	}
	return live, nil
}

// Stats implements store.Reader.
func (s *Store) Stats(ctx context.Context) (v1alpha1.StoreStats, error) {
	counts := store.ClusterCounts{}
	attempts, pods := s.query(), s.query()
	attempts.add(`SELECT cluster, COUNT(*), COALESCE(SUM(repeats), 0), COALESCE(SUM(size), 0) FROM attempts WHERE true`)
	attempts.inCluster("cluster", "")
	attempts.add(` GROUP BY cluster`)
	if err := s.each(ctx, attempts, func(rows *sql.Rows) error {
		var cluster string
		var stored, folded, size int64
		if err := rows.Scan(&cluster, &stored, &folded, &size); err != nil {
			return err
		}
		c := counts.Of(cluster)
		c.Attempts, c.Folded, c.Bytes = stored+folded, folded, size
		return nil
	}); err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", err)
	}
	pods.add(`SELECT cluster, COUNT(*) FROM pods WHERE true`)
	pods.inCluster("cluster", "")
	pods.add(` GROUP BY cluster`)
	if err := s.each(ctx, pods, func(rows *sql.Rows) error {
		var cluster string
		var n int64
		if err := rows.Scan(&cluster, &n); err != nil {
			return err
		}
		counts.Of(cluster).Pods = n
		return nil
	}); err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", err)
	}
	disk, err := s.disk(ctx)
	if err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", s.readErr(ctx, err))
	}
	return counts.Stats(disk), nil
}

package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/stream"
)

var _ store.Store = &Store{}

// Store is a store.Store in a PostgreSQL database.
type Store struct {
	pool      *pgxpool.Pool
	cluster   string
	retention store.Retention
}

// Open connects to the database at url (a postgres:// URL or key=value
// connection string, as libpq takes), migrates its schema, and returns
// the store writing the records of opts.Cluster.
func Open(ctx context.Context, url string, opts store.Options) (*Store, error) {
	if err := store.ValidateClusterName(opts.Cluster); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The error may quote the URL, password included: name the problem only.
		return nil, errors.New("parsing the PostgreSQL connection URL: not a valid postgres:// URL or connection string")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", cfg.ConnConfig.Host, err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("PostgreSQL database %q at %s: %w", cfg.ConnConfig.Database, cfg.ConnConfig.Host, err)
	}
	return &Store{pool: pool, cluster: opts.Cluster, retention: opts.Retention}, nil
}

// Close closes the connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Cursor implements store.Writer.
func (s *Store) Cursor(ctx context.Context) (v1alpha1.Cursor, error) {
	var c v1alpha1.Cursor
	var seq, lost int64
	err := s.pool.QueryRow(ctx, `SELECT epoch, seq, lost FROM cursors WHERE cluster = $1`, s.cluster).Scan(&c.Epoch, &seq, &lost)
	if errors.Is(err, pgx.ErrNoRows) {
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
	// Encode outside the transaction: it is the expensive part.
	rows, err := store.EncodeRows(s.cluster, cursor.Epoch, records)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, r := range rows {
			if err := insert(ctx, tx, s.cluster, cursor.Epoch, r); err != nil {
				return err
			}
		}
		return putCursor(ctx, tx, s.cluster, cursor)
	})
	if err != nil {
		return fmt.Errorf("storing %d records: %w", len(rows), err)
	}
	return nil
}

// insert stores a record, its pod and its rejections; a record already
// stored is left alone, and a repeat of the pod's latest unschedulable
// outcome is folded into it.
func insert(ctx context.Context, tx pgx.Tx, cluster, epoch string, r store.Row) error {
	a := r.Attempt
	if folded, err := foldRepeat(ctx, tx, cluster, epoch, r); folded || err != nil {
		return err
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO attempts
		(cluster, epoch, seq, uid, namespace, name, attempt, result, finished, size, summary, data, signature)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (cluster, epoch, seq) DO NOTHING RETURNING id`,
		cluster, epoch, int64(r.Seq), a.Pod.UID, a.Pod.Namespace, a.Pod.Name, a.Attempt, string(a.Result), r.Finished,
		len(r.Data), string(r.Summary), r.Data, r.Signature).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // already stored
	}
	if err != nil {
		return fmt.Errorf("storing record %d: %w", r.Seq, err)
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO pods (cluster, uid, namespace, name, first_seen, latest_id, finished, result)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (cluster, uid) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
			latest_id = excluded.latest_id, finished = excluded.finished, result = excluded.result
		WHERE excluded.latest_id > pods.latest_id`,
		cluster, a.Pod.UID, a.Pod.Namespace, a.Pod.Name, r.Finished, id, r.Finished, string(a.Result))
	queueRejections(b, cluster, id, r)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("indexing record %d: %w", r.Seq, err)
	}
	return nil
}

// queueRejections queues the inserts of r's rejections under attempt id.
func queueRejections(b *pgx.Batch, cluster string, id int64, r store.Row) {
	for _, rj := range r.Rejected {
		b.Queue(`INSERT INTO rejections (cluster, attempt_id, finished, namespace, plugin, nodes, node_names)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, cluster, id, r.Finished, r.Attempt.Pod.Namespace, rj.Plugin, rj.Nodes, rj.Names)
	}
}

// foldQuery asks, for the pod of UID $1 in cluster $4, whether sequence
// $3 of epoch $2 was folded into one of its attempts already, and what its
// latest attempt is.
const foldQuery = `SELECT EXISTS (SELECT 1 FROM attempts WHERE cluster = $4 AND uid = $1 AND epoch = $2 AND seq < $3 AND last_seq >= $3),
		a.id, a.epoch, a.seq, a.last_seq, a.signature
	FROM pods p JOIN attempts a ON a.id = p.latest_id WHERE p.cluster = $4 AND p.uid = $1`

// foldRepeat folds r into its pod's latest attempt when both were
// unschedulable with the same outcome in the same epoch: the attempt's
// repeat count and last attempt move on, its record is not stored again,
// and r's rejections are indexed (they count in the rejection totals).
// A repeat already folded is left alone. folded is false when r is not a
// repeat.
func foldRepeat(ctx context.Context, tx pgx.Tx, cluster, epoch string, r store.Row) (folded bool, err error) {
	if r.Signature == nil {
		return false, nil
	}
	a := r.Attempt
	var id, seq, lastSeq int64
	var latestEpoch string
	var sig []byte
	var before bool
	err = tx.QueryRow(ctx, foldQuery, a.Pod.UID, epoch, int64(r.Seq), cluster).
		Scan(&before, &id, &latestEpoch, &seq, &lastSeq, &sig)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the latest attempt of pod %s: %w", a.Pod.UID, err)
	}
	if before {
		return true, nil // folded before
	}
	if latestEpoch != epoch || !bytes.Equal(sig, r.Signature) {
		return false, nil
	}
	if int64(r.Seq) <= max(seq, lastSeq) {
		return true, nil // already stored or folded
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE attempts SET repeats = repeats + 1, last_attempt = $1, last_seq = $2, last_finished = $3 WHERE id = $4`,
		a.Attempt, int64(r.Seq), r.Finished, id)
	b.Queue(`UPDATE pods SET finished = $1 WHERE cluster = $2 AND uid = $3`, r.Finished, cluster, a.Pod.UID)
	queueRejections(b, cluster, id, r)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return false, fmt.Errorf("folding record %d: %w", r.Seq, err)
	}
	return true, nil
}

// putCursor stores cluster's cursor.
func putCursor(ctx context.Context, tx pgx.Tx, cluster string, cursor v1alpha1.Cursor) error {
	_, err := tx.Exec(ctx, `INSERT INTO cursors (cluster, epoch, seq, lost) VALUES ($1, $2, $3, $4)
		ON CONFLICT (cluster) DO UPDATE SET epoch = excluded.epoch, seq = excluded.seq, lost = excluded.lost`,
		cluster, cursor.Epoch, int64(cursor.Seq), int64(cursor.Lost))
	if err != nil {
		return fmt.Errorf("storing the cursor of cluster %q: %w", cluster, err)
	}
	return nil
}

// query builds a statement with numbered parameters.
type query struct {
	sql  string
	args []any
}

// arg appends a parameter and returns its placeholder.
func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

func (q *query) wherePod(pod store.PodSelector) error {
	switch {
	case pod.UID != "":
		q.sql += ` WHERE uid = ` + q.arg(pod.UID)
	case pod.Namespace != "" && pod.Name != "":
		q.sql += ` WHERE namespace = ` + q.arg(pod.Namespace) + ` AND name = ` + q.arg(pod.Name)
	default:
		return errors.New("a pod is selected by UID or by namespace and name")
	}
	q.inCluster("cluster", pod.Cluster)
	return nil
}

// inCluster keeps the rows of cluster in column; empty keeps all.
func (q *query) inCluster(column, cluster string) {
	if cluster != "" {
		q.sql += ` AND ` + column + ` = ` + q.arg(cluster)
	}
}

// inNamespaces keeps the rows of namespaces in column; nil keeps all.
func (q *query) inNamespaces(column string, namespaces []string) {
	switch {
	case namespaces == nil:
	case len(namespaces) == 0:
		q.sql += ` AND false`
	default:
		q.sql += ` AND ` + column + ` = ANY(` + q.arg(namespaces) + `)`
	}
}

func (q *query) limit(n int) {
	if n > 0 {
		q.sql += ` LIMIT ` + q.arg(n)
	}
}

// Attempts implements store.Reader.
func (s *Store) Attempts(ctx context.Context, pod store.PodSelector, limit int) ([]v1alpha1.AttemptSummary, error) {
	q := query{sql: `SELECT summary, repeats, last_attempt, last_finished FROM attempts`}
	if err := q.wherePod(pod); err != nil {
		return nil, err
	}
	q.sql += ` ORDER BY id DESC`
	q.limit(limit)
	rows, err := s.pool.Query(ctx, q.sql, q.args...)
	if err != nil {
		return nil, fmt.Errorf("listing attempts: %w", err)
	}
	var out []v1alpha1.AttemptSummary
	var summary string
	var repeats, lastAttempt int
	var lastFinished int64
	_, err = pgx.ForEachRow(rows, []any{&summary, &repeats, &lastAttempt, &lastFinished}, func() error {
		sum, err := store.DecodeSummary([]byte(summary), repeats, lastAttempt, lastFinished)
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
	q := query{sql: `SELECT summary, data FROM attempts`}
	if err := q.wherePod(pod); err != nil {
		return nil, err
	}
	if number > 0 {
		// A folded repeat is answered with the attempt it was folded into.
		n := q.arg(number)
		q.sql += ` AND attempt <= ` + n + ` AND (attempt = ` + n + ` OR last_attempt >= ` + n + `)`
	}
	q.sql += ` ORDER BY id DESC LIMIT 1`
	var summary string
	var data []byte
	if err := s.pool.QueryRow(ctx, q.sql, q.args...).Scan(&summary, &data); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, fmt.Errorf("reading attempt: %w", err)
	}
	return store.DecodeRecord([]byte(summary), data)
}

// Pods implements store.Reader.
func (s *Store) Pods(ctx context.Context, opts store.PodListOptions) ([]v1alpha1.PodStatus, error) {
	q := query{sql: `SELECT p.first_seen, a.summary, a.repeats, a.last_attempt, a.last_finished
		FROM pods p JOIN attempts a ON a.id = p.latest_id WHERE true`}
	if opts.PendingOnly {
		q.sql += ` AND p.result <> ` + q.arg(string(record.ResultScheduled))
	}
	q.inCluster("p.cluster", opts.Cluster)
	q.inNamespaces("p.namespace", opts.Namespaces)
	q.sql += ` ORDER BY p.finished DESC`
	q.limit(opts.Limit)
	rows, err := s.pool.Query(ctx, q.sql, q.args...)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := []v1alpha1.PodStatus{}
	var summary string
	var repeats, lastAttempt int
	var firstSeen, lastFinished int64
	_, err = pgx.ForEachRow(rows, []any{&firstSeen, &summary, &repeats, &lastAttempt, &lastFinished}, func() error {
		latest, err := store.DecodeSummary([]byte(summary), repeats, lastAttempt, lastFinished)
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
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT namespace FROM pods WHERE cluster = $1 ORDER BY namespace`, s.cluster)
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
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
	names := "NULL::bytea"
	if rq.By == v1alpha1.ByNode {
		names = "node_names"
	}
	q := query{sql: `SELECT plugin, finished, nodes, ` + names + ` FROM rejections WHERE true`}
	if !rq.Since.IsZero() {
		q.sql += ` AND finished >= ` + q.arg(rq.Since.UnixNano())
	}
	if !rq.Until.IsZero() {
		q.sql += ` AND finished < ` + q.arg(rq.Until.UnixNano())
	}
	q.inCluster("cluster", rq.Cluster)
	q.inNamespaces("namespace", rq.Namespaces)
	rows, err := s.pool.Query(ctx, q.sql, q.args...)
	if err != nil {
		return nil, fmt.Errorf("counting rejections: %w", err)
	}
	var plugin string
	var finished, nodes int64
	var nodeNames []byte
	_, err = pgx.ForEachRow(rows, []any{&plugin, &finished, &nodes, &nodeNames}, func() error {
		return t.AddRow(plugin, finished, nodes, nodeNames)
	})
	if err != nil {
		return nil, fmt.Errorf("counting rejections: %w", err)
	}
	return t.Result(), nil
}

// Stats implements store.Reader. DiskBytes is what PostgreSQL holds on
// disk for the store's tables, their indexes and out-of-line values.
func (s *Store) Stats(ctx context.Context) (v1alpha1.StoreStats, error) {
	counts := store.ClusterCounts{}
	var cluster string
	var stored, folded, size int64
	rows, err := s.pool.Query(ctx, `SELECT cluster, COUNT(*), COALESCE(SUM(repeats), 0), COALESCE(SUM(size), 0) FROM attempts GROUP BY cluster`)
	if err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&cluster, &stored, &folded, &size}, func() error {
		c := counts.Of(cluster)
		c.Attempts, c.Folded, c.Bytes = stored+folded, folded, size
		return nil
	}); err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", err)
	}
	var pods int64
	if rows, err = s.pool.Query(ctx, `SELECT cluster, COUNT(*) FROM pods GROUP BY cluster`); err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&cluster, &pods}, func() error {
		counts.Of(cluster).Pods = pods
		return nil
	}); err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", err)
	}
	var disk int64
	if err := s.pool.QueryRow(ctx, `SELECT SUM(pg_total_relation_size(t))::bigint
		FROM unnest(ARRAY['attempts', 'pods', 'rejections', 'meta']::regclass[]) t`).Scan(&disk); err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", err)
	}
	return counts.Stats(disk), nil
}

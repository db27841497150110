package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/stream"
)

var _ store.Store = &Store{}

// Store is a store.Store in a SQLite database file.
type Store struct {
	db        *sql.DB
	path      string
	cluster   string
	retention store.Retention

	// mu serializes writers: SQLite allows one at a time, and waiting here
	// is cheaper than retrying on SQLITE_BUSY.
	mu sync.Mutex
}

// Open opens (creating if needed) the database at path, to write the
// records of opts.Cluster.
func Open(ctx context.Context, path string, opts store.Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("database path is empty")
	}
	if err := store.ValidateClusterName(opts.Cluster); err != nil {
		return nil, err
	}
	// Records name pods and nodes: keep the file to its owner. SQLite
	// gives its -wal and -shm files the database file's mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening database %q: %w", path, err)
	}
	f.Close()
	q := url.Values{}
	// Pages freed by retention go back to the file system
	// (incremental_vacuum after each prune), and a checkpointed
	// write-ahead log is cut back to journalSizeLimit: the files on disk
	// stay within the retention's bytes.
	q.Add("_pragma", "auto_vacuum(INCREMENTAL)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", journalSizeLimit))
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening database %q: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %q: %w", path, err)
	}
	if err := ensureIncrementalVacuum(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %q: %w", path, err)
	}
	return &Store{db: db, path: path, cluster: opts.Cluster, retention: opts.Retention}, nil
}

// journalSizeLimit is what the write-ahead log is cut back to after a
// checkpoint.
const journalSizeLimit = 16 << 20

// ensureIncrementalVacuum converts a database created without incremental
// vacuum, once: auto_vacuum takes effect on a new file or after VACUUM.
func ensureIncrementalVacuum(ctx context.Context, db *sql.DB) error {
	var mode int
	if err := db.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return fmt.Errorf("reading auto_vacuum: %w", err)
	}
	const incremental = 2
	if mode == incremental {
		return nil
	}
	if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("converting to incremental vacuum: %w", err)
	}
	return nil
}

// DiskBytes returns the size of the database file and its write-ahead log.
func (s *Store) DiskBytes() (int64, error) {
	var total int64
	for _, name := range []string{s.path, s.path + "-wal"} {
		fi, err := os.Stat(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		total += fi.Size()
	}
	return total, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Cursor implements store.Writer.
func (s *Store) Cursor(ctx context.Context) (v1alpha1.Cursor, error) {
	var c v1alpha1.Cursor
	var seq, lost int64
	err := s.db.QueryRowContext(ctx, `SELECT epoch, seq, lost FROM cursors WHERE cluster = ?`, s.cluster).Scan(&c.Epoch, &seq, &lost)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("starting transaction: %w", err)
	}
	defer tx.Rollback()
	ins, err := prepareInserts(ctx, tx, s.cluster)
	if err != nil {
		return err
	}
	defer ins.close()
	for _, r := range rows {
		if err := ins.insert(ctx, cursor.Epoch, r); err != nil {
			return err
		}
	}
	if err := putCursor(ctx, tx, s.cluster, cursor); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing %d records: %w", len(rows), err)
	}
	return nil
}

// inserts are the statements that store a record of cluster.
type inserts struct {
	cluster                 string
	attempt, pod, rejection *sql.Stmt
	// latest reads a pod's latest attempt; fold folds a repeat into it
	// and touch moves the pod's finish time to the repeat's; folded finds
	// a repeat folded before.
	latest, fold, touch, folded *sql.Stmt
}

func prepareInserts(ctx context.Context, tx *sql.Tx, cluster string) (*inserts, error) {
	ins := inserts{cluster: cluster}
	var err error
	if ins.attempt, err = tx.PrepareContext(ctx, `INSERT OR IGNORE INTO attempts
		(cluster, epoch, seq, uid, namespace, name, attempt, result, finished, size, summary, data, signature)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return nil, fmt.Errorf("preparing insert: %w", err)
	}
	if ins.pod, err = tx.PrepareContext(ctx, `INSERT INTO pods (cluster, uid, namespace, name, first_seen, latest_id, finished, result)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (cluster, uid) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
			latest_id = excluded.latest_id, finished = excluded.finished, result = excluded.result
		WHERE excluded.latest_id > pods.latest_id`); err != nil {
		ins.close()
		return nil, fmt.Errorf("preparing pod upsert: %w", err)
	}
	if ins.rejection, err = tx.PrepareContext(ctx, `INSERT INTO rejections (cluster, attempt_id, finished, namespace, plugin, nodes, node_names)
		VALUES (?, ?, ?, ?, ?, ?, ?)`); err != nil {
		ins.close()
		return nil, fmt.Errorf("preparing rejection insert: %w", err)
	}
	if ins.latest, err = tx.PrepareContext(ctx, `SELECT a.id, a.epoch, a.seq, a.last_seq, a.signature
		FROM pods p JOIN attempts a ON a.id = p.latest_id WHERE p.cluster = ? AND p.uid = ?`); err != nil {
		ins.close()
		return nil, fmt.Errorf("preparing latest attempt query: %w", err)
	}
	if ins.fold, err = tx.PrepareContext(ctx, `UPDATE attempts SET repeats = repeats + 1, last_attempt = ?, last_seq = ?, last_finished = ?
		WHERE id = ?`); err != nil {
		ins.close()
		return nil, fmt.Errorf("preparing fold: %w", err)
	}
	if ins.touch, err = tx.PrepareContext(ctx, `UPDATE pods SET finished = ? WHERE cluster = ? AND uid = ?`); err != nil {
		ins.close()
		return nil, fmt.Errorf("preparing pod update: %w", err)
	}
	// The pod's attempts are few, its epoch's are many: without the
	// hint SQLite's planner may walk the epoch's by UNIQUE (cluster,
	// epoch, seq), every earlier record of the epoch for every record
	// stored.
	if ins.folded, err = tx.PrepareContext(ctx, `SELECT COUNT(*) FROM attempts INDEXED BY attempts_by_pod_epoch
		WHERE cluster = ? AND uid = ? AND epoch = ? AND seq < ? AND last_seq >= ?`); err != nil {
		ins.close()
		return nil, fmt.Errorf("preparing folded query: %w", err)
	}
	return &ins, nil
}

func (ins *inserts) close() {
	for _, st := range []*sql.Stmt{ins.attempt, ins.pod, ins.rejection, ins.latest, ins.fold, ins.touch, ins.folded} {
		if st != nil {
			st.Close()
		}
	}
}

// insert stores a record, its pod and its rejections; a record already
// stored is left alone, and a repeat of the pod's latest unschedulable
// outcome is folded into it.
func (ins *inserts) insert(ctx context.Context, epoch string, r store.Row) error {
	a := r.Attempt
	if folded, err := ins.foldRepeat(ctx, epoch, r); folded || err != nil {
		return err
	}
	res, err := ins.attempt.ExecContext(ctx, ins.cluster, epoch, int64(r.Seq), a.Pod.UID, a.Pod.Namespace, a.Pod.Name,
		a.Attempt, string(a.Result), r.Finished, len(r.Data), string(r.Summary), r.Data, r.Signature)
	if err != nil {
		return fmt.Errorf("storing record %d: %w", r.Seq, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // already stored
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("storing record %d: %w", r.Seq, err)
	}
	if _, err := ins.pod.ExecContext(ctx, ins.cluster, a.Pod.UID, a.Pod.Namespace, a.Pod.Name, r.Finished, id, r.Finished, string(a.Result)); err != nil {
		return fmt.Errorf("indexing pod of record %d: %w", r.Seq, err)
	}
	return ins.indexRejections(ctx, id, r)
}

// indexRejections stores the rejections of r's attempt under attempt id.
func (ins *inserts) indexRejections(ctx context.Context, id int64, r store.Row) error {
	for _, rj := range r.Rejected {
		if _, err := ins.rejection.ExecContext(ctx, ins.cluster, id, r.Finished, r.Attempt.Pod.Namespace, rj.Plugin, rj.Nodes, rj.Names); err != nil {
			return fmt.Errorf("indexing rejections of record %d: %w", r.Seq, err)
		}
	}
	return nil
}

// foldRepeat folds r into its pod's latest attempt when both were
// unschedulable with the same outcome in the same epoch: the attempt's
// repeat count and last attempt move on, its record is not stored again,
// and r's rejections are indexed (they count in the rejection totals).
// A repeat already folded is left alone. folded is false when r is not a
// repeat.
func (ins *inserts) foldRepeat(ctx context.Context, epoch string, r store.Row) (folded bool, err error) {
	if r.Signature == nil {
		return false, nil
	}
	var before int
	if err := ins.folded.QueryRowContext(ctx, ins.cluster, r.Attempt.Pod.UID, epoch, int64(r.Seq), int64(r.Seq)).Scan(&before); err != nil {
		return false, fmt.Errorf("looking for record %d among folded repeats: %w", r.Seq, err)
	}
	if before > 0 {
		return true, nil // folded before
	}
	var id int64
	var latestEpoch string
	var seq, lastSeq uint64
	var sig []byte
	err = ins.latest.QueryRowContext(ctx, ins.cluster, r.Attempt.Pod.UID).Scan(&id, &latestEpoch, &seq, &lastSeq, &sig)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the latest attempt of pod %s: %w", r.Attempt.Pod.UID, err)
	}
	if latestEpoch != epoch || !bytes.Equal(sig, r.Signature) {
		return false, nil
	}
	if r.Seq <= max(seq, lastSeq) {
		return true, nil // already stored or folded
	}
	if _, err := ins.fold.ExecContext(ctx, r.Attempt.Attempt, int64(r.Seq), r.Finished, id); err != nil {
		return false, fmt.Errorf("folding record %d: %w", r.Seq, err)
	}
	if _, err := ins.touch.ExecContext(ctx, r.Finished, ins.cluster, r.Attempt.Pod.UID); err != nil {
		return false, fmt.Errorf("indexing pod of record %d: %w", r.Seq, err)
	}
	return true, ins.indexRejections(ctx, id, r)
}

// putCursor stores cluster's cursor.
func putCursor(ctx context.Context, tx *sql.Tx, cluster string, cursor v1alpha1.Cursor) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO cursors (cluster, epoch, seq, lost) VALUES (?, ?, ?, ?)
		ON CONFLICT (cluster) DO UPDATE SET epoch = excluded.epoch, seq = excluded.seq, lost = excluded.lost`,
		cluster, cursor.Epoch, int64(cursor.Seq), int64(cursor.Lost)); err != nil {
		return fmt.Errorf("storing the cursor of cluster %q: %w", cluster, err)
	}
	return nil
}

func podWhere(pod store.PodSelector) (string, []any, error) {
	var where string
	var args []any
	switch {
	case pod.UID != "":
		where, args = "uid = ?", []any{pod.UID}
	case pod.Namespace != "" && pod.Name != "":
		where, args = "namespace = ? AND name = ?", []any{pod.Namespace, pod.Name}
	default:
		return "", nil, errors.New("a pod is selected by UID or by namespace and name")
	}
	if pod.Cluster != "" {
		where += " AND cluster = ?"
		args = append(args, pod.Cluster)
	}
	return where, args, nil
}

// Attempts implements store.Reader.
func (s *Store) Attempts(ctx context.Context, pod store.PodSelector, limit int) ([]v1alpha1.AttemptSummary, error) {
	where, args, err := podWhere(pod)
	if err != nil {
		return nil, err
	}
	q := `SELECT summary, repeats, last_attempt, last_finished FROM attempts WHERE ` + where + ` ORDER BY id DESC`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing attempts: %w", err)
	}
	defer rows.Close()
	var out []v1alpha1.AttemptSummary
	for rows.Next() {
		var f foldedSummary
		if err := rows.Scan(&f.summary, &f.repeats, &f.lastAttempt, &f.lastFinished); err != nil {
			return nil, fmt.Errorf("listing attempts: %w", err)
		}
		sum, err := f.decode()
		if err != nil {
			return nil, err
		}
		out = append(out, sum)
	}
	return out, rows.Err()
}

// foldedSummary is an attempt's stored summary and the repeats folded
// into it.
type foldedSummary struct {
	summary      []byte
	repeats      int
	lastAttempt  int
	lastFinished int64
}

func (f foldedSummary) decode() (v1alpha1.AttemptSummary, error) {
	return store.DecodeSummary(f.summary, f.repeats, f.lastAttempt, f.lastFinished)
}

// Attempt implements store.Reader.
func (s *Store) Attempt(ctx context.Context, pod store.PodSelector, number int) (*stream.Record, error) {
	where, args, err := podWhere(pod)
	if err != nil {
		return nil, err
	}
	q := `SELECT summary, data FROM attempts WHERE ` + where
	if number > 0 {
		// A folded repeat is answered with the attempt it was folded into.
		q += ` AND attempt <= ? AND (attempt = ? OR last_attempt >= ?)`
		args = append(args, number, number, number)
	}
	q += ` ORDER BY id DESC LIMIT 1`
	var summary, data []byte
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&summary, &data); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, fmt.Errorf("reading attempt: %w", err)
	}
	return store.DecodeRecord(summary, data)
}

func inNamespaces(column string, namespaces []string) (string, []any) {
	if namespaces == nil {
		return "", nil
	}
	if len(namespaces) == 0 {
		return " AND 0", nil
	}
	args := make([]any, len(namespaces))
	for i, ns := range namespaces {
		args[i] = ns
	}
	return " AND " + column + " IN (" + strings.TrimSuffix(strings.Repeat("?,", len(namespaces)), ",") + ")", args
}

// Pods implements store.Reader.
func (s *Store) Pods(ctx context.Context, opts store.PodListOptions) ([]v1alpha1.PodStatus, error) {
	q := `SELECT p.first_seen, a.summary, a.repeats, a.last_attempt, a.last_finished FROM pods p JOIN attempts a ON a.id = p.latest_id WHERE 1`
	var args []any
	if opts.PendingOnly {
		q += ` AND p.result != ?`
		args = append(args, string(record.ResultScheduled))
	}
	if opts.Cluster != "" {
		q += ` AND p.cluster = ?`
		args = append(args, opts.Cluster)
	}
	nsq, nsargs := inNamespaces("p.namespace", opts.Namespaces)
	q += nsq
	args = append(args, nsargs...)
	q += ` ORDER BY p.finished DESC`
	if opts.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, opts.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	defer rows.Close()
	out := []v1alpha1.PodStatus{}
	for rows.Next() {
		var firstSeen int64
		var f foldedSummary
		if err := rows.Scan(&firstSeen, &f.summary, &f.repeats, &f.lastAttempt, &f.lastFinished); err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		var p v1alpha1.PodStatus
		var err error
		if p.Latest, err = f.decode(); err != nil {
			return nil, err
		}
		p.Cluster, p.Pod, p.Profile = p.Latest.Cluster, p.Latest.Pod, p.Latest.Profile
		p.FirstSeen = time.Unix(0, firstSeen).UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}

// Namespaces implements store.Reader.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT namespace FROM pods WHERE cluster = ? ORDER BY namespace`, s.cluster)
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, fmt.Errorf("listing namespaces: %w", err)
		}
		out = append(out, ns)
	}
	return out, rows.Err()
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
	where, args := rejectionWhere(rq)
	err = s.scan(ctx, `SELECT plugin, finished, nodes, `+names+` FROM rejections`+where, args, func(rows *sql.Rows) error {
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

// rejectionWhere is the WHERE clause of a rejection query.
func rejectionWhere(rq store.RejectionQuery) (string, []any) {
	where := ` WHERE 1`
	var args []any
	if !rq.Since.IsZero() {
		where += ` AND finished >= ?`
		args = append(args, rq.Since.UnixNano())
	}
	if !rq.Until.IsZero() {
		where += ` AND finished < ?`
		args = append(args, rq.Until.UnixNano())
	}
	if rq.Cluster != "" {
		where += ` AND cluster = ?`
		args = append(args, rq.Cluster)
	}
	nsq, nsargs := inNamespaces("namespace", rq.Namespaces)
	return where + nsq, append(args, nsargs...)
}

// scan calls row for every row of a query.
func (s *Store) scan(ctx context.Context, query string, args []any, row func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Stats implements store.Reader.
func (s *Store) Stats(ctx context.Context) (v1alpha1.StoreStats, error) {
	counts := store.ClusterCounts{}
	if err := s.scan(ctx, `SELECT cluster, COUNT(*), COALESCE(SUM(repeats), 0), COALESCE(SUM(size), 0) FROM attempts GROUP BY cluster`, nil,
		func(rows *sql.Rows) error {
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
	if err := s.scan(ctx, `SELECT cluster, COUNT(*) FROM pods GROUP BY cluster`, nil, func(rows *sql.Rows) error {
		var cluster string
		var pods int64
		if err := rows.Scan(&cluster, &pods); err != nil {
			return err
		}
		counts.Of(cluster).Pods = pods
		return nil
	}); err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", err)
	}
	disk, err := s.DiskBytes()
	if err != nil {
		return v1alpha1.StoreStats{}, fmt.Errorf("reading stats: %w", err)
	}
	return counts.Stats(disk), nil
}

// Prune implements store.Store: of the store's cluster's attempts, it
// removes those older than MaxAge, then the oldest beyond MaxAttempts and
// beyond MaxAttemptsPerNamespace in each namespace, with their index rows;
// then, while the files on disk exceed MaxDiskBytes, the oldest in
// proportion to the excess, giving the freed pages back to the file
// system. The file is the whole store's: with several clusters in one
// file, MaxDiskBytes bounds them together and removes only this one's.
func (s *Store) Prune(ctx context.Context, now time.Time) (removed int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, c := s.retention, s.cluster
	var deletes []func(*sql.Tx) (sql.Result, error)
	if r.MaxAge > 0 {
		deletes = append(deletes, func(tx *sql.Tx) (sql.Result, error) {
			return tx.ExecContext(ctx, `DELETE FROM attempts WHERE cluster = ? AND finished < ?`, c, now.Add(-r.MaxAge).UnixNano())
		})
	}
	if r.MaxAttempts > 0 {
		deletes = append(deletes, func(tx *sql.Tx) (sql.Result, error) {
			return tx.ExecContext(ctx, `DELETE FROM attempts WHERE cluster = ?1 AND id <= (
				SELECT id FROM attempts WHERE cluster = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)`, c, r.MaxAttempts)
		})
	}
	if r.MaxAttemptsPerNamespace > 0 {
		deletes = append(deletes, func(tx *sql.Tx) (sql.Result, error) {
			return tx.ExecContext(ctx, `DELETE FROM attempts WHERE id IN (
				SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY namespace ORDER BY id DESC) AS newer FROM attempts WHERE cluster = ?)
				WHERE newer > ?)`, c, r.MaxAttemptsPerNamespace)
		})
	}
	if removed, err = s.deleteAttempts(ctx, deletes...); err != nil {
		return removed, err
	}
	if r.MaxDiskBytes <= 0 {
		return removed, nil
	}
	// Each round removes the oldest attempts in proportion to the excess
	// (aiming a tenth below the bound); sizes vary, so a few rounds may
	// be needed.
	for range 4 {
		if err := s.reclaim(ctx); err != nil {
			return removed, err
		}
		used, err := s.DiskBytes()
		if err != nil {
			return removed, fmt.Errorf("pruning by size: %w", err)
		}
		if used <= r.MaxDiskBytes {
			return removed, nil
		}
		n, err := s.deleteAttempts(ctx, func(tx *sql.Tx) (sql.Result, error) {
			var count, all int64
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(cluster = ?), 0) FROM attempts`, c).Scan(&all, &count); err != nil {
				return nil, err
			}
			// The excess in proportion to all attempts, taken from this
			// cluster's.
			excess := used - r.MaxDiskBytes*9/10
			k := max(1, (all*excess+used-1)/used)
			return tx.ExecContext(ctx, `DELETE FROM attempts WHERE id IN (SELECT id FROM attempts WHERE cluster = ? ORDER BY id LIMIT ?)`, c, min(k, count))
		})
		removed += n
		if err != nil {
			return removed, err
		}
		if n == 0 {
			break
		}
	}
	return removed, s.reclaim(ctx)
}

// deleteAttempts runs deletes of attempts in one transaction, then removes
// the pods and rejection rows they leave without an attempt.
func (s *Store) deleteAttempts(ctx context.Context, deletes ...func(*sql.Tx) (sql.Result, error)) (removed int, err error) {
	if len(deletes) == 0 {
		return 0, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("starting transaction: %w", err)
	}
	defer tx.Rollback()
	for _, del := range deletes {
		res, err := del(tx)
		if err != nil {
			return 0, fmt.Errorf("pruning: %w", err)
		}
		n, _ := res.RowsAffected()
		removed += int(n)
	}
	if removed > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM rejections WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.id = rejections.attempt_id)`); err != nil {
			return 0, fmt.Errorf("pruning rejections: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM pods WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.id = pods.latest_id)`); err != nil {
			return 0, fmt.Errorf("pruning pods: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("committing prune: %w", err)
	}
	return removed, nil
}

// reclaim gives the database's free pages back to the file system and
// checkpoints the write-ahead log, truncating it.
func (s *Store) reclaim(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `PRAGMA incremental_vacuum`); err != nil {
		return fmt.Errorf("reclaiming free pages: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("checkpointing the write-ahead log: %w", err)
	}
	return nil
}

// DeleteNamespace implements store.Store.
func (s *Store) DeleteNamespace(ctx context.Context, namespace string) (removed int, err error) {
	c := s.cluster
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("starting transaction: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM attempts WHERE cluster = ? AND namespace = ?`, c, namespace)
	if err != nil {
		return 0, fmt.Errorf("deleting the attempts of namespace %q: %w", namespace, err)
	}
	n, _ := res.RowsAffected()
	for _, q := range []string{`DELETE FROM rejections WHERE cluster = ? AND namespace = ?`, `DELETE FROM pods WHERE cluster = ? AND namespace = ?`} {
		if _, err := tx.ExecContext(ctx, q, c, namespace); err != nil {
			return 0, fmt.Errorf("deleting the index of namespace %q: %w", namespace, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("committing the deletion of namespace %q: %w", namespace, err)
	}
	return int(n), nil
}

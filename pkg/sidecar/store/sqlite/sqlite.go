package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
)

var _ store.Store = &Store{}

const schema = `
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	epoch     TEXT    NOT NULL,
	seq       INTEGER NOT NULL,
	uid       TEXT    NOT NULL,
	namespace TEXT    NOT NULL,
	name      TEXT    NOT NULL,
	attempt   INTEGER NOT NULL,
	result    TEXT    NOT NULL,
	finished  INTEGER NOT NULL,
	size      INTEGER NOT NULL,
	summary   TEXT    NOT NULL,
	data      BLOB    NOT NULL,
	UNIQUE (epoch, seq)
);
CREATE INDEX IF NOT EXISTS attempts_by_pod ON attempts (namespace, name, id);
CREATE INDEX IF NOT EXISTS attempts_by_uid ON attempts (uid, id);
CREATE INDEX IF NOT EXISTS attempts_by_finished ON attempts (finished);
CREATE TABLE IF NOT EXISTS pods (
	uid        TEXT PRIMARY KEY,
	namespace  TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	first_seen INTEGER NOT NULL,
	latest_id  INTEGER NOT NULL,
	finished   INTEGER NOT NULL,
	result     TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS pods_by_result ON pods (result, finished);
CREATE INDEX IF NOT EXISTS pods_by_finished ON pods (finished);
CREATE INDEX IF NOT EXISTS pods_by_name ON pods (namespace, name);
CREATE TABLE IF NOT EXISTS rejections (
	attempt_id INTEGER NOT NULL,
	finished   INTEGER NOT NULL,
	namespace  TEXT    NOT NULL,
	plugin     TEXT    NOT NULL,
	nodes      INTEGER NOT NULL,
	node_names BLOB    NOT NULL
);
CREATE INDEX IF NOT EXISTS rejections_by_finished ON rejections (finished, plugin);
CREATE INDEX IF NOT EXISTS rejections_by_attempt ON rejections (attempt_id);
`

// Meta keys.
const (
	metaEpoch = "cursor.epoch"
	metaSeq   = "cursor.seq"
	metaLost  = "cursor.lost"
)

// Store is a store.Store in a SQLite database file.
type Store struct {
	db        *sql.DB
	retention store.Retention

	// mu serializes writers: SQLite allows one at a time, and waiting here
	// is cheaper than retrying on SQLITE_BUSY.
	mu sync.Mutex
}

// Open opens (creating if needed) the database at path.
func Open(ctx context.Context, path string, retention store.Retention) (*Store, error) {
	if path == "" {
		return nil, errors.New("database path is empty")
	}
	// Records name pods and nodes: keep the file to its owner. SQLite
	// gives its -wal and -shm files the database file's mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening database %q: %w", path, err)
	}
	f.Close()
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening database %q: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("creating schema in %q: %w", path, err)
	}
	return &Store{db: db, retention: retention}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Cursor implements store.Writer.
func (s *Store) Cursor(ctx context.Context) (v1alpha1.Cursor, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key, value FROM meta WHERE key IN (?, ?, ?)`, metaEpoch, metaSeq, metaLost)
	if err != nil {
		return v1alpha1.Cursor{}, fmt.Errorf("reading cursor: %w", err)
	}
	defer rows.Close()
	var c v1alpha1.Cursor
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return v1alpha1.Cursor{}, fmt.Errorf("reading cursor: %w", err)
		}
		switch k {
		case metaEpoch:
			c.Epoch = v
		case metaSeq:
			c.Seq, err = strconv.ParseUint(v, 10, 64)
		case metaLost:
			c.Lost, err = strconv.ParseUint(v, 10, 64)
		}
		if err != nil {
			return v1alpha1.Cursor{}, fmt.Errorf("reading cursor %s=%q: %w", k, v, err)
		}
	}
	return c, rows.Err()
}

// Append implements store.Writer.
func (s *Store) Append(ctx context.Context, cursor v1alpha1.Cursor, records []store.Record) (err error) {
	// Encode outside the lock and the transaction: it is the expensive part.
	type row struct {
		a        *record.Attempt
		summary  []byte
		data     []byte
		finished int64
		rejected []rejectionRow
	}
	rows := make([]row, len(records))
	encode := func(i int) error {
		a := records[i].Attempt
		var data []byte
		if records[i].JSON != nil {
			data = compress(records[i].JSON)
		} else {
			var err error
			if data, err = encodeAttempt(a); err != nil {
				return err
			}
		}
		sum := store.Summarize(a, cursor.Epoch)
		sum.StoredBytes = len(data)
		summary, err := json.Marshal(sum)
		if err != nil {
			return fmt.Errorf("encoding summary of record %d: %w", a.Seq, err)
		}
		rows[i] = row{a: a, summary: summary, data: data, finished: sum.Finished.UnixNano(), rejected: rejectionRows(a)}
		return nil
	}
	// Encoding a large record costs milliseconds; spread a batch over the CPUs.
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range records {
		g.Go(func() error { return encode(i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("starting transaction: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	insAttempt, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO attempts
		(epoch, seq, uid, namespace, name, attempt, result, finished, size, summary, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("preparing insert: %w", err)
	}
	defer insAttempt.Close()
	upsertPod, err := tx.PrepareContext(ctx, `INSERT INTO pods (uid, namespace, name, first_seen, latest_id, finished, result)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
			latest_id = excluded.latest_id, finished = excluded.finished, result = excluded.result
		WHERE excluded.latest_id > pods.latest_id`)
	if err != nil {
		return fmt.Errorf("preparing pod upsert: %w", err)
	}
	defer upsertPod.Close()
	insRejection, err := tx.PrepareContext(ctx, `INSERT INTO rejections (attempt_id, finished, namespace, plugin, nodes, node_names)
		VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("preparing rejection insert: %w", err)
	}
	defer insRejection.Close()

	for _, r := range rows {
		a := r.a
		res, err := insAttempt.ExecContext(ctx, cursor.Epoch, int64(a.Seq), a.Pod.UID, a.Pod.Namespace, a.Pod.Name,
			a.Attempt, string(a.Result), r.finished, len(r.data), string(r.summary), r.data)
		if err != nil {
			return fmt.Errorf("storing record %d: %w", a.Seq, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue // already stored
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("storing record %d: %w", a.Seq, err)
		}
		if _, err := upsertPod.ExecContext(ctx, a.Pod.UID, a.Pod.Namespace, a.Pod.Name, r.finished, id, r.finished, string(a.Result)); err != nil {
			return fmt.Errorf("indexing pod of record %d: %w", a.Seq, err)
		}
		for _, rj := range r.rejected {
			if _, err := insRejection.ExecContext(ctx, id, r.finished, a.Pod.Namespace, rj.plugin, rj.nodes, rj.names); err != nil {
				return fmt.Errorf("indexing rejections of record %d: %w", a.Seq, err)
			}
		}
	}
	for k, v := range map[string]string{
		metaEpoch: cursor.Epoch,
		metaSeq:   strconv.FormatUint(cursor.Seq, 10),
		metaLost:  strconv.FormatUint(cursor.Lost, 10),
	} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, k, v); err != nil {
			return fmt.Errorf("storing cursor: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing %d records: %w", len(rows), err)
	}
	return nil
}

type rejectionRow struct {
	plugin string
	nodes  int
	names  []byte
}

func rejectionRows(a *record.Attempt) []rejectionRow {
	var rows []rejectionRow
	for _, r := range a.RejectionsByPlugin() {
		rows = append(rows, rejectionRow{plugin: r.Plugin, nodes: len(r.Nodes), names: encodeNodes(r.Nodes)})
	}
	return rows
}

func podWhere(pod store.PodSelector) (string, []any, error) {
	switch {
	case pod.UID != "":
		return "uid = ?", []any{pod.UID}, nil
	case pod.Namespace != "" && pod.Name != "":
		return "namespace = ? AND name = ?", []any{pod.Namespace, pod.Name}, nil
	default:
		return "", nil, errors.New("a pod is selected by UID or by namespace and name")
	}
}

// Attempts implements store.Reader.
func (s *Store) Attempts(ctx context.Context, pod store.PodSelector, limit int) ([]v1alpha1.AttemptSummary, error) {
	where, args, err := podWhere(pod)
	if err != nil {
		return nil, err
	}
	q := `SELECT summary FROM attempts WHERE ` + where + ` ORDER BY id DESC`
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
		var summary string
		if err := rows.Scan(&summary); err != nil {
			return nil, fmt.Errorf("listing attempts: %w", err)
		}
		var sum v1alpha1.AttemptSummary
		if err := json.Unmarshal([]byte(summary), &sum); err != nil {
			return nil, fmt.Errorf("decoding attempt summary: %w", err)
		}
		out = append(out, sum)
	}
	return out, rows.Err()
}

// Attempt implements store.Reader.
func (s *Store) Attempt(ctx context.Context, pod store.PodSelector, number int) (*record.Attempt, error) {
	where, args, err := podWhere(pod)
	if err != nil {
		return nil, err
	}
	q := `SELECT data FROM attempts WHERE ` + where
	if number > 0 {
		q += ` AND attempt = ?`
		args = append(args, number)
	}
	q += ` ORDER BY id DESC LIMIT 1`
	var data []byte
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&data); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, fmt.Errorf("reading attempt: %w", err)
	}
	return decodeAttempt(data)
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
	q := `SELECT p.first_seen, a.summary FROM pods p JOIN attempts a ON a.id = p.latest_id WHERE 1`
	var args []any
	if opts.PendingOnly {
		q += ` AND p.result != ?`
		args = append(args, string(record.ResultScheduled))
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
		var summary string
		if err := rows.Scan(&firstSeen, &summary); err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		var p v1alpha1.PodStatus
		if err := json.Unmarshal([]byte(summary), &p.Latest); err != nil {
			return nil, fmt.Errorf("decoding attempt summary: %w", err)
		}
		p.Pod = p.Latest.Pod
		p.Profile = p.Latest.Profile
		p.FirstSeen = time.Unix(0, firstSeen).UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}

// Namespaces implements store.Reader.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT namespace FROM pods ORDER BY namespace`)
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
	nsq, nsargs := inNamespaces("namespace", rq.Namespaces)
	where += nsq
	args = append(args, nsargs...)

	if rq.Step > 0 && rq.Buckets() == 0 {
		return nil, fmt.Errorf("a step needs a window: since %v, until %v", rq.Since, rq.Until)
	}
	buckets := rq.Buckets()
	counts := map[string]*v1alpha1.RejectionCount{}
	get := func(key string) *v1alpha1.RejectionCount {
		c := counts[key]
		if c == nil {
			c = &v1alpha1.RejectionCount{Key: key}
			if buckets > 0 {
				c.Series = make([]v1alpha1.RejectionBucket, buckets)
				for i := range c.Series {
					c.Series[i].Start = rq.Since.Add(time.Duration(i) * rq.Step).UTC()
				}
			}
			counts[key] = c
		}
		return c
	}
	bucketOf := func(finished int64) int {
		if buckets == 0 {
			return -1
		}
		return min(int((finished-rq.Since.UnixNano())/int64(rq.Step)), buckets-1)
	}
	switch rq.By {
	case v1alpha1.ByPlugin:
		rows, err := s.db.QueryContext(ctx, `SELECT plugin, attempt_id, finished, nodes FROM rejections`+where, args...)
		if err != nil {
			return nil, fmt.Errorf("counting rejections: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var plugin string
			var id, finished, nodes int64
			if err := rows.Scan(&plugin, &id, &finished, &nodes); err != nil {
				return nil, fmt.Errorf("counting rejections: %w", err)
			}
			// One row per attempt and plugin.
			c := get(plugin)
			c.Attempts++
			c.Nodes += nodes
			if b := bucketOf(finished); b >= 0 {
				c.Series[b].Attempts++
				c.Series[b].Nodes += nodes
			}
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	case v1alpha1.ByNode:
		rows, err := s.db.QueryContext(ctx, `SELECT plugin, finished, node_names FROM rejections`+where, args...)
		if err != nil {
			return nil, fmt.Errorf("counting rejections: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var plugin string
			var finished int64
			var names []byte
			if err := rows.Scan(&plugin, &finished, &names); err != nil {
				return nil, fmt.Errorf("counting rejections: %w", err)
			}
			nodes, err := decodeNodes(names)
			if err != nil {
				return nil, err
			}
			b := bucketOf(finished)
			for _, n := range nodes {
				c := get(n)
				if c.Plugins == nil {
					c.Plugins = map[string]int64{}
				}
				// A node gets one verdict per attempt.
				c.Attempts++
				c.Nodes++
				c.Plugins[plugin]++
				if b >= 0 {
					c.Series[b].Attempts++
					c.Series[b].Nodes++
				}
			}
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown grouping %q", rq.By)
	}
	out := make([]v1alpha1.RejectionCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Nodes != out[j].Nodes {
			return out[i].Nodes > out[j].Nodes
		}
		return out[i].Key < out[j].Key
	})
	if rq.Limit > 0 && len(out) > rq.Limit {
		out = out[:rq.Limit]
	}
	return out, nil
}

// Stats implements store.Reader.
func (s *Store) Stats(ctx context.Context) (v1alpha1.StoreStats, error) {
	var st v1alpha1.StoreStats
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM attempts`).Scan(&st.Attempts, &st.Bytes); err != nil {
		return st, fmt.Errorf("reading stats: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pods`).Scan(&st.Pods); err != nil {
		return st, fmt.Errorf("reading stats: %w", err)
	}
	return st, nil
}

// Prune implements store.Store: it removes attempts older than MaxAge, then
// the oldest attempts beyond MaxAttempts and MaxBytes, with their index rows.
func (s *Store) Prune(ctx context.Context, now time.Time) (removed int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("starting transaction: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	exec := func(q string, args ...any) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("pruning: %w", err)
		}
		n, _ := res.RowsAffected()
		removed += int(n)
		return nil
	}
	r := s.retention
	if r.MaxAge > 0 {
		if err := exec(`DELETE FROM attempts WHERE finished < ?`, now.Add(-r.MaxAge).UnixNano()); err != nil {
			return 0, err
		}
	}
	if r.MaxAttempts > 0 {
		if err := exec(`DELETE FROM attempts WHERE id <= (SELECT id FROM attempts ORDER BY id DESC LIMIT 1 OFFSET ?)`, r.MaxAttempts); err != nil {
			return 0, err
		}
	}
	if r.MaxBytes > 0 {
		// Keep the newest attempts whose sizes add up to at most MaxBytes.
		var cut sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(id) FROM (
			SELECT id, SUM(size) OVER (ORDER BY id DESC) AS newer FROM attempts
		) WHERE newer > ?`, r.MaxBytes).Scan(&cut); err != nil {
			return 0, fmt.Errorf("pruning by size: %w", err)
		}
		if cut.Valid {
			if err := exec(`DELETE FROM attempts WHERE id <= ?`, cut.Int64); err != nil {
				return 0, err
			}
		}
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

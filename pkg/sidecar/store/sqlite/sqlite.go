package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlstore"
)

var _ store.Store = &Store{}

// dialect is SQLite's: ? parameters, index hints, INTEGER for every
// integer, and tables rebuilt to change their keys. The schema version is
// SQLite's user_version; BEGIN IMMEDIATE (the _txlock Open sets) makes
// migrations one at a time.
var dialect = sqlstore.Dialect{
	HintsIndexes:    true,
	ID:              "INTEGER PRIMARY KEY AUTOINCREMENT",
	Int:             "INTEGER",
	BigInt:          "INTEGER",
	Text:            "TEXT",
	Bytes:           "BLOB",
	RekeysByRebuild: true,
	ReadVersion:     "PRAGMA user_version",
	// PRAGMA takes no parameters; version is an int.
	WriteVersion: func(version int) string { return fmt.Sprintf("PRAGMA user_version = %d", version) },
}

// Store is a store.Store in a SQLite database file.
type Store struct {
	*sqlstore.Store
	// db is the writer's one connection: Append, Cursor, retention and
	// DeleteNamespace. The Reader's queries have read-only connections
	// of their own, which in WAL mode read beside the writer without
	// blocking it.
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
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: path, cluster: opts.Cluster, retention: opts.Retention}
	if err := s.prepare(ctx, opts); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %q: %w", path, err)
	}
	return s, nil
}

// prepare migrates the database and converts it to incremental vacuum,
// then opens the readers' connections and prepares the store's statements.
func (s *Store) prepare(ctx context.Context, opts store.Options) error {
	if err := migrate(ctx, s.db); err != nil {
		return err
	}
	if err := ensureIncrementalVacuum(ctx, s.db); err != nil {
		return err
	}
	// The file is in WAL mode now, which it keeps; query_only refuses
	// writes on the readers' connections.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "query_only(1)")
	reads, err := sql.Open("sqlite", "file:"+s.path+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("opening the readers' connections: %w", err)
	}
	reads.SetMaxOpenConns(opts.Reads.Conns())
	reads.SetMaxIdleConns(opts.Reads.Conns())
	s.Store, err = sqlstore.New(ctx, s.db, &dialect, sqlstore.Config{
		Cluster:     s.cluster,
		AllClusters: opts.AllClusters,
		Writes:      &s.mu,
		DiskBytes:   func(context.Context) (int64, error) { return s.DiskBytes() },
		Reads:       reads,
	})
	if err != nil {
		reads.Close()
	}
	return err
}

// migrate brings the database to the newest schema version. Pages a step
// freed (version 3 copies the attempts and pods tables) go back to the
// file system, and the write-ahead log that held the copy is truncated.
func migrate(ctx context.Context, db *sql.DB) error {
	from, err := sqlstore.Migrate(ctx, db, &dialect)
	if err != nil || from == 0 || from == store.SchemaVersion {
		return err
	}
	for _, pragma := range []string{"PRAGMA incremental_vacuum", "PRAGMA wal_checkpoint(TRUNCATE)"} {
		if _, err := db.ExecContext(ctx, pragma); err != nil {
			return fmt.Errorf("reclaiming the space the migration freed (%s): %w", pragma, err)
		}
	}
	return nil
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

// Prune implements store.Store: of the store's cluster's attempts, it
// removes those older than MaxAge, then the oldest beyond each
// namespace's fair share of MaxAttempts and beyond
// MaxAttemptsPerNamespace in each namespace, with their index rows; then,
// while the files on disk exceed MaxDiskBytes, the oldest of the
// namespaces over their fair share of the record bytes left after giving
// up the excess, giving the freed pages back to the file system. A fair
// share is max-min fair (sqlstore.FairShare): a namespace under it keeps
// every attempt, the others their newest within it. The file is the whole
// store's: with several clusters in one file, MaxDiskBytes bounds them
// together and removes only this one's, in proportion to the excess.
func (s *Store) Prune(ctx context.Context, now time.Time) (removed int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, c := s.retention, s.cluster
	if removed, err = sqlstore.RemoveSilentClusters(ctx, s.db, &dialect, c, now, r.RemoveSilentClustersAfter); err != nil {
		return removed, err
	}
	var deletes []func(*sql.Tx) (int, error)
	if r.MaxAge > 0 {
		deletes = append(deletes, func(tx *sql.Tx) (int, error) {
			return exec(tx.ExecContext(ctx, `DELETE FROM attempts WHERE cluster = ? AND finished < ?`, c, now.Add(-r.MaxAge).UnixNano()))
		})
	}
	if r.MaxAttempts > 0 {
		deletes = append(deletes, func(tx *sql.Tx) (int, error) {
			return s.deleteBeyondFairShare(ctx, tx, sqlstore.Attempts, r.MaxAttempts)
		})
	}
	if r.MaxAttemptsPerNamespace > 0 {
		deletes = append(deletes, func(tx *sql.Tx) (int, error) {
			return exec(tx.ExecContext(ctx, `DELETE FROM attempts WHERE id IN (
				SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY namespace ORDER BY id DESC) AS newer FROM attempts WHERE cluster = ?)
				WHERE newer > ?)`, c, r.MaxAttemptsPerNamespace))
		})
	}
	n, err := s.deleteAttempts(ctx, deletes...)
	if removed += n; err != nil {
		return removed, err
	}
	if r.MaxDiskBytes <= 0 {
		return removed, nil
	}
	// Each round gives up the cluster's part of the excess (aiming a
	// tenth below the bound); sizes and overheads vary, so a few rounds
	// may be needed.
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
		n, err := s.deleteAttempts(ctx, func(tx *sql.Tx) (int, error) {
			var all, mine int64
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0), COALESCE(SUM(CASE WHEN cluster = ? THEN size END), 0) FROM attempts`, c).Scan(&all, &mine); err != nil {
				return 0, err
			}
			return s.deleteBeyondFairShare(ctx, tx, sqlstore.Bytes, sqlstore.ByteBudget(used, r.MaxDiskBytes, all, mine))
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

// deleteBeyondFairShare deletes the oldest attempts of the store's
// cluster's namespaces over their fair share of budget in m.
func (s *Store) deleteBeyondFairShare(ctx context.Context, tx *sql.Tx, m sqlstore.Measure, budget int64) (removed int, err error) {
	cutoffs, err := sqlstore.FairCutoffs(ctx, tx, &dialect, s.cluster, m, budget)
	if err != nil {
		return 0, err
	}
	for _, cut := range cutoffs {
		n, err := exec(tx.ExecContext(ctx, `DELETE FROM attempts WHERE cluster = ? AND namespace = ? AND id <= ?`, s.cluster, cut.Namespace, cut.ID))
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// exec returns the rows a statement affected.
func exec(res sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// deleteAttempts runs deletes of attempts in one transaction, then removes
// the pods, rejection rows and shadow runs they leave without an attempt.
func (s *Store) deleteAttempts(ctx context.Context, deletes ...func(*sql.Tx) (int, error)) (removed int, err error) {
	if len(deletes) == 0 {
		return 0, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("starting transaction: %w", err)
	}
	defer tx.Rollback()
	for _, del := range deletes {
		n, err := del(tx)
		if err != nil {
			return 0, fmt.Errorf("pruning: %w", err)
		}
		removed += n
	}
	if removed > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM rejections WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.id = rejections.attempt_id)`); err != nil {
			return 0, fmt.Errorf("pruning rejections: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM shadow_runs WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.id = shadow_runs.attempt_id)`); err != nil {
			return 0, fmt.Errorf("pruning shadow runs: %w", err)
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
	for _, q := range []string{
		`DELETE FROM rejections WHERE cluster = ? AND namespace = ?`,
		`DELETE FROM shadow_runs WHERE cluster = ? AND namespace = ?`,
		`DELETE FROM pods WHERE cluster = ? AND namespace = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, c, namespace); err != nil {
			return 0, fmt.Errorf("deleting the index of namespace %q: %w", namespace, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("committing the deletion of namespace %q: %w", namespace, err)
	}
	return int(n), nil
}

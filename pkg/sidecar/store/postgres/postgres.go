package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlstore"
)

var _ store.Store = &Store{}

// migrationLock is the advisory lock key under which sidecars sharing a
// database migrate it one at a time.
const migrationLock = 0x5c4ed5c0

// dialect is PostgreSQL's: numbered parameters, 32- and 64-bit integers,
// the compressed columns out of line, the indexes of batched retention,
// and keys changed in place. The schema version is the one row of
// schema_version, written under the migration lock.
var dialect = sqlstore.Dialect{
	NumberedParams:   true,
	ID:               "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	Int:              "integer",
	BigInt:           "bigint",
	Text:             "text",
	Bytes:            "bytea",
	StoresOutOfLine:  true,
	BatchedPrune:     true,
	RowLevelSecurity: true,
	BeginMigration: fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d);
		CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`, migrationLock),
	ReadVersion: `SELECT COALESCE(MAX(version), 0) FROM schema_version`,
	WriteVersion: func(version int) string {
		return fmt.Sprintf(`DELETE FROM schema_version; INSERT INTO schema_version (version) VALUES (%d)`, version)
	},
	TimedOut: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == queryCanceled
	},
}

// Store is a store.Store in a PostgreSQL database.
type Store struct {
	*sqlstore.Store
	// db holds the writers' connections (writeConns): the follower's,
	// retention's and a deleted namespace's. reads holds the Reader's, at
	// most ReadLimits.MaxConns, with ReadLimits.Timeout as their
	// statement_timeout.
	db        *sql.DB
	reads     *sql.DB
	cluster   string
	retention store.Retention
}

// writeConns is how many connections the writers have: the follower's
// Append and Cursor, retention (which holds its connection for its
// batches) and DeleteNamespace each take one, so that none waits for
// another's.
const writeConns = 3

// Open connects to the database at url (a postgres:// URL or key=value
// connection string, as libpq takes, with pgxpool's
// pool_max_conn_lifetime and pool_max_conn_idle_time), migrates its
// schema, and returns the store writing the records of opts.Cluster.
func Open(ctx context.Context, url string, opts store.Options) (*Store, error) {
	if err := store.ValidateClusterName(opts.Cluster); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The error may quote the URL, password included: name the problem only.
		return nil, errors.New("parsing the PostgreSQL connection URL: not a valid postgres:// URL or connection string")
	}
	readCfg := cfg.ConnConfig.Copy()
	if opts.Reads.Timeout > 0 {
		readCfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(opts.Reads.Timeout.Milliseconds(), 10)
	}
	db := openDB(cfg, cfg.ConnConfig, writeConns)
	reads := openDB(cfg, readCfg, opts.Reads.Conns())
	s := &Store{db: db, reads: reads, cluster: opts.Cluster, retention: opts.Retention}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		reads.Close()
		return nil, fmt.Errorf("PostgreSQL database %q at %s: %w", cfg.ConnConfig.Database, cfg.ConnConfig.Host, err)
	}
	if s.Store, err = sqlstore.New(ctx, db, &dialect, sqlstore.Config{Cluster: opts.Cluster, AllClusters: opts.AllClusters, DiskBytes: s.diskBytes, Reads: reads}); err != nil {
		db.Close()
		reads.Close()
		return nil, fmt.Errorf("PostgreSQL database %q at %s: %w", cfg.ConnConfig.Database, cfg.ConnConfig.Host, err)
	}
	return s, nil
}

// migrate brings the schema to this build's version. A schema at that
// version already is only read: a cluster's writer role (cluster_writers)
// may not change it, and migrating needs the tables' owner.
func migrate(ctx context.Context, db *sql.DB) error {
	var version int
	if err := db.QueryRowContext(ctx, dialect.ReadVersion).Scan(&version); err == nil && version == store.SchemaVersion {
		return nil
	}
	if _, err := sqlstore.Migrate(ctx, db, &dialect); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == insufficientPrivilege {
			return fmt.Errorf("%w: this build needs schema version %d; connect once as the tables' owner to migrate the schema", err, store.SchemaVersion)
		}
		return err
	}
	return nil
}

// insufficientPrivilege is PostgreSQL's SQLSTATE of a statement the role
// may not run.
const insufficientPrivilege = "42501"

// openDB returns a pool of at most conns connections of conn, with pool's
// lifetimes.
func openDB(pool *pgxpool.Config, conn *pgx.ConnConfig, conns int) *sql.DB {
	db := stdlib.OpenDB(*conn)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(pool.MaxConnLifetime)
	db.SetConnMaxIdleTime(pool.MaxConnIdleTime)
	return db
}

// queryCanceled is PostgreSQL's SQLSTATE of a statement canceled by its
// statement_timeout (or a cancel request).
const queryCanceled = "57014"

// diskBytes is what PostgreSQL holds on disk for the store's tables, their
// indexes and out-of-line values.
func (s *Store) diskBytes(ctx context.Context) (int64, error) {
	var disk int64
	err := s.reads.QueryRowContext(ctx, `SELECT SUM(pg_total_relation_size(t))::bigint
		FROM unnest(ARRAY['attempts', 'pods', 'rejections', 'shadow_runs', 'meta']::regclass[]) t`).Scan(&disk)
	return disk, err
}

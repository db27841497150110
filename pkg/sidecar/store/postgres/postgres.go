package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
	NumberedParams:  true,
	ID:              "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	Int:             "integer",
	BigInt:          "bigint",
	Text:            "text",
	Bytes:           "bytea",
	StoresOutOfLine: true,
	BatchedPrune:    true,
	BeginMigration: fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d);
		CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`, migrationLock),
	ReadVersion: `SELECT COALESCE(MAX(version), 0) FROM schema_version`,
	WriteVersion: func(version int) string {
		return fmt.Sprintf(`DELETE FROM schema_version; INSERT INTO schema_version (version) VALUES (%d)`, version)
	},
}

// Store is a store.Store in a PostgreSQL database.
type Store struct {
	*sqlstore.Store
	db        *sql.DB
	cluster   string
	retention store.Retention
}

// Open connects to the database at url (a postgres:// URL or key=value
// connection string, as libpq takes, with pgxpool's pool_* settings),
// migrates its schema, and returns the store writing the records of
// opts.Cluster.
func Open(ctx context.Context, url string, opts store.Options) (*Store, error) {
	if err := store.ValidateClusterName(opts.Cluster); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The error may quote the URL, password included: name the problem only.
		return nil, errors.New("parsing the PostgreSQL connection URL: not a valid postgres:// URL or connection string")
	}
	db := stdlib.OpenDB(*cfg.ConnConfig)
	db.SetMaxOpenConns(int(cfg.MaxConns))
	db.SetMaxIdleConns(int(cfg.MaxConns))
	db.SetConnMaxLifetime(cfg.MaxConnLifetime)
	db.SetConnMaxIdleTime(cfg.MaxConnIdleTime)
	s := &Store{db: db, cluster: opts.Cluster, retention: opts.Retention}
	if _, err := sqlstore.Migrate(ctx, db, &dialect); err != nil {
		db.Close()
		return nil, fmt.Errorf("PostgreSQL database %q at %s: %w", cfg.ConnConfig.Database, cfg.ConnConfig.Host, err)
	}
	if s.Store, err = sqlstore.New(ctx, db, &dialect, sqlstore.Config{Cluster: opts.Cluster, DiskBytes: s.diskBytes}); err != nil {
		db.Close()
		return nil, fmt.Errorf("PostgreSQL database %q at %s: %w", cfg.ConnConfig.Database, cfg.ConnConfig.Host, err)
	}
	return s, nil
}

// diskBytes is what PostgreSQL holds on disk for the store's tables, their
// indexes and out-of-line values.
func (s *Store) diskBytes(ctx context.Context) (int64, error) {
	var disk int64
	err := s.db.QueryRowContext(ctx, `SELECT SUM(pg_total_relation_size(t))::bigint
		FROM unnest(ARRAY['attempts', 'pods', 'rejections', 'meta']::regclass[]) t`).Scan(&disk)
	return disk, err
}

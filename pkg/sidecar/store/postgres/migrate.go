package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are the schema's versions, the same history as the SQLite
// store's: migrations[i] takes a database from version i to i+1. The
// version is the one row of schema_version. Append a migration to change
// the schema; never edit one.
var migrations = []string{
	// 1: records, pods, the rejection index and the follower's cursor.
	// Records are zstd-compressed already: stored out of line, uncompressed.
	`
CREATE TABLE meta (
	key   text PRIMARY KEY,
	value text NOT NULL
);
CREATE TABLE attempts (
	id        bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	epoch     text    NOT NULL,
	seq       bigint  NOT NULL,
	uid       text    NOT NULL,
	namespace text    NOT NULL,
	name      text    NOT NULL,
	attempt   integer NOT NULL,
	result    text    NOT NULL,
	finished  bigint  NOT NULL,
	size      integer NOT NULL,
	summary   text    NOT NULL,
	data      bytea   NOT NULL,
	UNIQUE (epoch, seq)
);
ALTER TABLE attempts ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE INDEX attempts_by_pod ON attempts (namespace, name, id);
CREATE INDEX attempts_by_uid ON attempts (uid, id);
CREATE INDEX attempts_by_finished ON attempts (finished);
CREATE INDEX attempts_by_namespace ON attempts (namespace, id);
CREATE TABLE pods (
	uid        text PRIMARY KEY,
	namespace  text   NOT NULL,
	name       text   NOT NULL,
	first_seen bigint NOT NULL,
	latest_id  bigint NOT NULL,
	finished   bigint NOT NULL,
	result     text   NOT NULL
);
CREATE INDEX pods_by_result ON pods (result, finished);
CREATE INDEX pods_by_finished ON pods (finished);
CREATE INDEX pods_by_name ON pods (namespace, name);
CREATE INDEX pods_by_latest ON pods (latest_id);
CREATE TABLE rejections (
	attempt_id bigint  NOT NULL,
	finished   bigint  NOT NULL,
	namespace  text    NOT NULL,
	plugin     text    NOT NULL,
	nodes      integer NOT NULL,
	node_names bytea   NOT NULL
);
ALTER TABLE rejections ALTER COLUMN node_names SET STORAGE EXTERNAL;
CREATE INDEX rejections_by_finished ON rejections (finished, plugin);
CREATE INDEX rejections_by_attempt ON rejections (attempt_id);
`,
	// 2: repeats of an unschedulable outcome fold into the attempt that
	// had it first: its outcome's signature, how many repeats, the last.
	`
ALTER TABLE attempts
	ADD COLUMN signature bytea,
	ADD COLUMN repeats integer NOT NULL DEFAULT 0,
	ADD COLUMN last_attempt integer NOT NULL DEFAULT 0,
	ADD COLUMN last_seq bigint NOT NULL DEFAULT 0,
	ADD COLUMN last_finished bigint NOT NULL DEFAULT 0;
`,
	// 3: records of several clusters. Attempts, pods and rejections carry
	// their cluster ('' for the unnamed one, which every record stored
	// before belongs to); an attempt is unique by cluster, epoch and
	// sequence, a pod by cluster and UID, and each cluster has its own
	// cursor. A column with a constant default is added without
	// rewriting the table.
	`
ALTER TABLE attempts ADD COLUMN cluster text NOT NULL DEFAULT '';
ALTER TABLE attempts DROP CONSTRAINT attempts_epoch_seq_key;
ALTER TABLE attempts ADD CONSTRAINT attempts_cluster_epoch_seq_key UNIQUE (cluster, epoch, seq);
DROP INDEX attempts_by_finished;
CREATE INDEX attempts_by_finished ON attempts (cluster, finished);
DROP INDEX attempts_by_namespace;
CREATE INDEX attempts_by_namespace ON attempts (cluster, namespace, id);
CREATE INDEX attempts_by_cluster ON attempts (cluster, id);
ALTER TABLE pods ADD COLUMN cluster text NOT NULL DEFAULT '';
ALTER TABLE pods DROP CONSTRAINT pods_pkey;
ALTER TABLE pods ADD PRIMARY KEY (cluster, uid);
ALTER TABLE rejections ADD COLUMN cluster text NOT NULL DEFAULT '';
CREATE TABLE cursors (
	cluster text   PRIMARY KEY,
	epoch   text   NOT NULL,
	seq     bigint NOT NULL,
	lost    bigint NOT NULL
);
INSERT INTO cursors (cluster, epoch, seq, lost)
	SELECT '',
		COALESCE(MAX(CASE key WHEN 'cursor.epoch' THEN value END), ''),
		COALESCE(MAX(CASE key WHEN 'cursor.seq' THEN value END), '0')::bigint,
		COALESCE(MAX(CASE key WHEN 'cursor.lost' THEN value END), '0')::bigint
	FROM meta WHERE key IN ('cursor.epoch', 'cursor.seq', 'cursor.lost') HAVING COUNT(*) > 0;
DELETE FROM meta WHERE key IN ('cursor.epoch', 'cursor.seq', 'cursor.lost');
`,
	// 4: whether a record was folded already is asked of its pod's
	// attempts in its epoch: an index leads there by cluster, UID, epoch
	// and sequence, where UNIQUE (cluster, epoch, seq) walked every
	// earlier record of the epoch.
	`
CREATE INDEX attempts_by_pod_epoch ON attempts (cluster, uid, epoch, seq);
`,
}

// migrationLock is the advisory lock key under which sidecars sharing a
// database migrate it one at a time.
const migrationLock = 0x5c4ed5c0

// migrate brings the database to the newest schema version, each step in
// its own transaction. A database of a newer version than this build knows
// is refused: this build might misread it.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	for {
		done, err := step(ctx, pool)
		if err != nil || done {
			return err
		}
	}
}

// step migrates one version forward, under the migration lock; done is
// true when the schema is the newest.
func step(ctx context.Context, pool *pgxpool.Pool) (done bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`); err != nil {
			return fmt.Errorf("creating the schema version table: %w", err)
		}
		version, err := schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if version > len(migrations) {
			return fmt.Errorf("schema version %d is newer than this build's %d: run a newer schedscope", version, len(migrations))
		}
		if version == len(migrations) {
			done = true
			return nil
		}
		if _, err := tx.Exec(ctx, migrations[version]); err != nil {
			return fmt.Errorf("migrating the schema from version %d to %d: %w", version, version+1, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM schema_version`); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, version+1)
		return err
	})
	return done, err
}

// schemaVersion reads the database's schema version, 0 when new.
func schemaVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var version int
	if err := q.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&version); err != nil {
		return 0, fmt.Errorf("reading the schema version: %w", err)
	}
	return version, nil
}

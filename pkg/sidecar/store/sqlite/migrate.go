package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema's versions: migrations[i] takes a database from
// version i to i+1. The database's version is SQLite's user_version (0 for
// a new file). Append a migration to change the schema; never edit one.
var migrations = []string{
	// 1: records, pods, the rejection index and the follower's cursor.
	`
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE attempts (
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
CREATE INDEX attempts_by_pod ON attempts (namespace, name, id);
CREATE INDEX attempts_by_uid ON attempts (uid, id);
CREATE INDEX attempts_by_finished ON attempts (finished);
CREATE TABLE pods (
	uid        TEXT PRIMARY KEY,
	namespace  TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	first_seen INTEGER NOT NULL,
	latest_id  INTEGER NOT NULL,
	finished   INTEGER NOT NULL,
	result     TEXT    NOT NULL
);
CREATE INDEX pods_by_result ON pods (result, finished);
CREATE INDEX pods_by_finished ON pods (finished);
CREATE INDEX pods_by_name ON pods (namespace, name);
CREATE TABLE rejections (
	attempt_id INTEGER NOT NULL,
	finished   INTEGER NOT NULL,
	namespace  TEXT    NOT NULL,
	plugin     TEXT    NOT NULL,
	nodes      INTEGER NOT NULL,
	node_names BLOB    NOT NULL
);
CREATE INDEX rejections_by_finished ON rejections (finished, plugin);
CREATE INDEX rejections_by_attempt ON rejections (attempt_id);
`,
	// 2: repeats of an unschedulable outcome fold into the attempt that
	// had it first: its outcome's signature, how many repeats, the last.
	`
ALTER TABLE attempts ADD COLUMN signature BLOB;
ALTER TABLE attempts ADD COLUMN repeats INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN last_attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN last_finished INTEGER NOT NULL DEFAULT 0;
`,
	// 3: records of several clusters. Attempts, pods and rejections carry
	// their cluster ('' for the unnamed one, which every record stored
	// before belongs to); an attempt is unique by cluster, epoch and
	// sequence, a pod by cluster and UID, and each cluster has its own
	// cursor. SQLite changes a table's keys only by rebuilding it: the
	// attempts and pods tables are copied (ids kept, and the attempts'
	// AUTOINCREMENT counter) into tables with the new keys.
	`
CREATE TABLE attempts_v3 (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	cluster       TEXT    NOT NULL DEFAULT '',
	epoch         TEXT    NOT NULL,
	seq           INTEGER NOT NULL,
	uid           TEXT    NOT NULL,
	namespace     TEXT    NOT NULL,
	name          TEXT    NOT NULL,
	attempt       INTEGER NOT NULL,
	result        TEXT    NOT NULL,
	finished      INTEGER NOT NULL,
	size          INTEGER NOT NULL,
	summary       TEXT    NOT NULL,
	data          BLOB    NOT NULL,
	signature     BLOB,
	repeats       INTEGER NOT NULL DEFAULT 0,
	last_attempt  INTEGER NOT NULL DEFAULT 0,
	last_seq      INTEGER NOT NULL DEFAULT 0,
	last_finished INTEGER NOT NULL DEFAULT 0,
	UNIQUE (cluster, epoch, seq)
);
INSERT INTO attempts_v3 (id, epoch, seq, uid, namespace, name, attempt, result, finished, size, summary, data,
		signature, repeats, last_attempt, last_seq, last_finished)
	SELECT id, epoch, seq, uid, namespace, name, attempt, result, finished, size, summary, data,
		signature, repeats, last_attempt, last_seq, last_finished FROM attempts;
DELETE FROM sqlite_sequence WHERE name = 'attempts_v3';
INSERT INTO sqlite_sequence (name, seq) SELECT 'attempts_v3', seq FROM sqlite_sequence WHERE name = 'attempts';
DROP TABLE attempts;
ALTER TABLE attempts_v3 RENAME TO attempts;
CREATE INDEX attempts_by_pod ON attempts (namespace, name, id);
CREATE INDEX attempts_by_uid ON attempts (uid, id);
CREATE INDEX attempts_by_finished ON attempts (cluster, finished);
CREATE INDEX attempts_by_cluster ON attempts (cluster, id);

CREATE TABLE pods_v3 (
	cluster    TEXT    NOT NULL DEFAULT '',
	uid        TEXT    NOT NULL,
	namespace  TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	first_seen INTEGER NOT NULL,
	latest_id  INTEGER NOT NULL,
	finished   INTEGER NOT NULL,
	result     TEXT    NOT NULL,
	PRIMARY KEY (cluster, uid)
);
INSERT INTO pods_v3 (uid, namespace, name, first_seen, latest_id, finished, result)
	SELECT uid, namespace, name, first_seen, latest_id, finished, result FROM pods;
DROP TABLE pods;
ALTER TABLE pods_v3 RENAME TO pods;
CREATE INDEX pods_by_result ON pods (result, finished);
CREATE INDEX pods_by_finished ON pods (finished);
CREATE INDEX pods_by_name ON pods (namespace, name);

ALTER TABLE rejections ADD COLUMN cluster TEXT NOT NULL DEFAULT '';

CREATE TABLE cursors (
	cluster TEXT PRIMARY KEY,
	epoch   TEXT    NOT NULL,
	seq     INTEGER NOT NULL,
	lost    INTEGER NOT NULL
);
INSERT INTO cursors (cluster, epoch, seq, lost)
	SELECT '',
		COALESCE(MAX(CASE key WHEN 'cursor.epoch' THEN value END), ''),
		CAST(COALESCE(MAX(CASE key WHEN 'cursor.seq' THEN value END), '0') AS INTEGER),
		CAST(COALESCE(MAX(CASE key WHEN 'cursor.lost' THEN value END), '0') AS INTEGER)
	FROM meta WHERE key IN ('cursor.epoch', 'cursor.seq', 'cursor.lost') HAVING COUNT(*) > 0;
DELETE FROM meta WHERE key IN ('cursor.epoch', 'cursor.seq', 'cursor.lost');
`,
	// 4: whether a record was folded already is asked of its pod's
	// attempts in its epoch: an index leads there by cluster, UID, epoch
	// and sequence.
	`
CREATE INDEX attempts_by_pod_epoch ON attempts (cluster, uid, epoch, seq);
`,
}

// migrate brings the database to the newest schema version, each step in
// its own transaction. A database of a newer version than this build knows
// is refused: this build might misread it. Pages a step freed (version
// 3 copies the attempts and pods tables) go back to the file system, and
// the write-ahead log that held the copy is truncated.
func migrate(ctx context.Context, db *sql.DB) error {
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this build's %d: run a newer schedscope", version, len(migrations))
	}
	if err := stepAll(ctx, db, version); err != nil || version == 0 || version == len(migrations) {
		return err
	}
	for _, pragma := range []string{"PRAGMA incremental_vacuum", "PRAGMA wal_checkpoint(TRUNCATE)"} {
		if _, err := db.ExecContext(ctx, pragma); err != nil {
			return fmt.Errorf("reclaiming the space the migration freed (%s): %w", pragma, err)
		}
	}
	return nil
}

// stepAll migrates from version to the newest.
func stepAll(ctx context.Context, db *sql.DB, version int) error {
	for v := version; v < len(migrations); v++ {
		if err := step(ctx, db, v+1, migrations[v]); err != nil {
			return fmt.Errorf("migrating the schema from version %d to %d: %w", v, v+1, err)
		}
	}
	return nil
}

func step(ctx context.Context, db *sql.DB, to int, ddl string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, ddl); err != nil {
		return err
	}
	// PRAGMA takes no parameters; to is an int.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", to)); err != nil {
		return err
	}
	return tx.Commit()
}

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
}

// migrate brings the database to the newest schema version, each step in
// its own transaction. A database of a newer version than this build knows
// is refused: this build might misread it.
func migrate(ctx context.Context, db *sql.DB) error {
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this build's %d: run a newer schedscope", version, len(migrations))
	}
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

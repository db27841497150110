package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"text/template"
)

// history is the schema's versions, as templates over a Dialect:
// history[i] takes a database from version i to i+1. Append a version to
// change the schema; never edit one: databases of every version exist.
var history = parseHistory(
	// 1: records, pods, the rejection index and the follower's cursor.
	// Records are zstd-compressed already: where the database would
	// compress them again, they are stored out of line, uncompressed.
	`
CREATE TABLE meta (
	key   {{.Text}} PRIMARY KEY,
	value {{.Text}} NOT NULL
);
CREATE TABLE attempts (
	id        {{.ID}},
	epoch     {{.Text}} NOT NULL,
	seq       {{.BigInt}} NOT NULL,
	uid       {{.Text}} NOT NULL,
	namespace {{.Text}} NOT NULL,
	name      {{.Text}} NOT NULL,
	attempt   {{.Int}} NOT NULL,
	result    {{.Text}} NOT NULL,
	finished  {{.BigInt}} NOT NULL,
	size      {{.Int}} NOT NULL,
	summary   {{.Text}} NOT NULL,
	data      {{.Bytes}} NOT NULL,
	UNIQUE (epoch, seq)
);
{{if .StoresOutOfLine}}ALTER TABLE attempts ALTER COLUMN data SET STORAGE EXTERNAL;{{end}}
CREATE INDEX attempts_by_pod ON attempts (namespace, name, id);
CREATE INDEX attempts_by_uid ON attempts (uid, id);
CREATE INDEX attempts_by_finished ON attempts (finished);
{{if .BatchedPrune}}CREATE INDEX attempts_by_namespace ON attempts (namespace, id);{{end}}
CREATE TABLE pods (
	uid        {{.Text}} PRIMARY KEY,
	namespace  {{.Text}} NOT NULL,
	name       {{.Text}} NOT NULL,
	first_seen {{.BigInt}} NOT NULL,
	latest_id  {{.BigInt}} NOT NULL,
	finished   {{.BigInt}} NOT NULL,
	result     {{.Text}} NOT NULL
);
CREATE INDEX pods_by_result ON pods (result, finished);
CREATE INDEX pods_by_finished ON pods (finished);
CREATE INDEX pods_by_name ON pods (namespace, name);
{{if .BatchedPrune}}CREATE INDEX pods_by_latest ON pods (latest_id);{{end}}
CREATE TABLE rejections (
	attempt_id {{.BigInt}} NOT NULL,
	finished   {{.BigInt}} NOT NULL,
	namespace  {{.Text}} NOT NULL,
	plugin     {{.Text}} NOT NULL,
	nodes      {{.Int}} NOT NULL,
	node_names {{.Bytes}} NOT NULL
);
{{if .StoresOutOfLine}}ALTER TABLE rejections ALTER COLUMN node_names SET STORAGE EXTERNAL;{{end}}
CREATE INDEX rejections_by_finished ON rejections (finished, plugin);
CREATE INDEX rejections_by_attempt ON rejections (attempt_id);
`,
	// 2: repeats of an unschedulable outcome fold into the attempt that
	// had it first: its outcome's signature, how many repeats, the last.
	`
ALTER TABLE attempts ADD COLUMN signature {{.Bytes}};
ALTER TABLE attempts ADD COLUMN repeats {{.Int}} NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN last_attempt {{.Int}} NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN last_seq {{.BigInt}} NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN last_finished {{.BigInt}} NOT NULL DEFAULT 0;
`,
	// 3: records of several clusters. Attempts, pods and rejections carry
	// their cluster ('' for the unnamed one, which every record stored
	// before belongs to); an attempt is unique by cluster, epoch and
	// sequence, a pod by cluster and UID, and each cluster has its own
	// cursor. Where keys change only by rebuilding a table, the attempts
	// and pods tables are copied (ids kept, and the attempts' id counter)
	// into tables with the new keys; elsewhere a column with a constant
	// default is added without rewriting the table.
	`
{{if .RekeysByRebuild}}
CREATE TABLE attempts_v3 (
	id            {{.ID}},
	cluster       {{.Text}} NOT NULL DEFAULT '',
	epoch         {{.Text}} NOT NULL,
	seq           {{.BigInt}} NOT NULL,
	uid           {{.Text}} NOT NULL,
	namespace     {{.Text}} NOT NULL,
	name          {{.Text}} NOT NULL,
	attempt       {{.Int}} NOT NULL,
	result        {{.Text}} NOT NULL,
	finished      {{.BigInt}} NOT NULL,
	size          {{.Int}} NOT NULL,
	summary       {{.Text}} NOT NULL,
	data          {{.Bytes}} NOT NULL,
	signature     {{.Bytes}},
	repeats       {{.Int}} NOT NULL DEFAULT 0,
	last_attempt  {{.Int}} NOT NULL DEFAULT 0,
	last_seq      {{.BigInt}} NOT NULL DEFAULT 0,
	last_finished {{.BigInt}} NOT NULL DEFAULT 0,
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
	cluster    {{.Text}} NOT NULL DEFAULT '',
	uid        {{.Text}} NOT NULL,
	namespace  {{.Text}} NOT NULL,
	name       {{.Text}} NOT NULL,
	first_seen {{.BigInt}} NOT NULL,
	latest_id  {{.BigInt}} NOT NULL,
	finished   {{.BigInt}} NOT NULL,
	result     {{.Text}} NOT NULL,
	PRIMARY KEY (cluster, uid)
);
INSERT INTO pods_v3 (uid, namespace, name, first_seen, latest_id, finished, result)
	SELECT uid, namespace, name, first_seen, latest_id, finished, result FROM pods;
DROP TABLE pods;
ALTER TABLE pods_v3 RENAME TO pods;
CREATE INDEX pods_by_result ON pods (result, finished);
CREATE INDEX pods_by_finished ON pods (finished);
CREATE INDEX pods_by_name ON pods (namespace, name);
{{else}}
ALTER TABLE attempts ADD COLUMN cluster {{.Text}} NOT NULL DEFAULT '';
ALTER TABLE attempts DROP CONSTRAINT attempts_epoch_seq_key;
ALTER TABLE attempts ADD CONSTRAINT attempts_cluster_epoch_seq_key UNIQUE (cluster, epoch, seq);
DROP INDEX attempts_by_finished;
CREATE INDEX attempts_by_finished ON attempts (cluster, finished);
{{if .BatchedPrune}}
DROP INDEX attempts_by_namespace;
CREATE INDEX attempts_by_namespace ON attempts (cluster, namespace, id);
{{end}}
CREATE INDEX attempts_by_cluster ON attempts (cluster, id);
ALTER TABLE pods ADD COLUMN cluster {{.Text}} NOT NULL DEFAULT '';
ALTER TABLE pods DROP CONSTRAINT pods_pkey;
ALTER TABLE pods ADD PRIMARY KEY (cluster, uid);
{{end}}
ALTER TABLE rejections ADD COLUMN cluster {{.Text}} NOT NULL DEFAULT '';

CREATE TABLE cursors (
	cluster {{.Text}} PRIMARY KEY,
	epoch   {{.Text}} NOT NULL,
	seq     {{.BigInt}} NOT NULL,
	lost    {{.BigInt}} NOT NULL
);
INSERT INTO cursors (cluster, epoch, seq, lost)
	SELECT '',
		COALESCE(MAX(CASE key WHEN 'cursor.epoch' THEN value END), ''),
		CAST(COALESCE(MAX(CASE key WHEN 'cursor.seq' THEN value END), '0') AS {{.BigInt}}),
		CAST(COALESCE(MAX(CASE key WHEN 'cursor.lost' THEN value END), '0') AS {{.BigInt}})
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
	// 5: the shadow runs of each attempt, one row per shadow profile,
	// written with the attempt (and with each repeat folded into it), so
	// that a shadow's summary is counted without decoding records. Runs
	// of attempts stored before are not indexed.
	`
CREATE TABLE shadow_runs (
	cluster             {{.Text}} NOT NULL,
	attempt_id          {{.BigInt}} NOT NULL,
	finished            {{.BigInt}} NOT NULL,
	namespace           {{.Text}} NOT NULL,
	profile             {{.Text}} NOT NULL,
	shadow              {{.Text}} NOT NULL,
	outcome             {{.Text}} NOT NULL,
	not_compared_reason {{.Text}} NOT NULL,
	plugin              {{.Text}} NOT NULL
);
CREATE INDEX shadow_runs_by_shadow ON shadow_runs (shadow, finished);
CREATE INDEX shadow_runs_by_attempt ON shadow_runs (attempt_id);
`,
	// 6: each cluster's writer notes when it was last alive, so that the
	// records of a cluster whose writer is gone can be removed by policy;
	// 0 is a cursor of before: the clock starts when a writer first sees it.
	`
ALTER TABLE cursors ADD COLUMN seen {{.BigInt}} NOT NULL DEFAULT 0;
`,
	// 7: a database role listed in cluster_writers may insert, update and
	// delete only the rows of its cluster, in every table that has a
	// cluster; it may read every row (an API answers for the clusters it
	// is told to). The tables' owner, which migrates, is not confined.
	`
{{if .RowLevelSecurity}}
CREATE TABLE cluster_writers (
	role    {{.Text}} PRIMARY KEY,
	cluster {{.Text}} NOT NULL
);
{{range $t := list "attempts" "pods" "rejections" "shadow_runs" "cursors"}}
ALTER TABLE {{$t}} ENABLE ROW LEVEL SECURITY;
CREATE POLICY everyone_reads ON {{$t}} FOR SELECT USING (true);
CREATE POLICY writer_inserts ON {{$t}} FOR INSERT WITH CHECK (cluster IN (SELECT cluster FROM cluster_writers WHERE role = current_user));
CREATE POLICY writer_updates ON {{$t}} FOR UPDATE USING (cluster IN (SELECT cluster FROM cluster_writers WHERE role = current_user));
CREATE POLICY writer_deletes ON {{$t}} FOR DELETE USING (cluster IN (SELECT cluster FROM cluster_writers WHERE role = current_user));
{{end}}
{{end}}
`,
)

// list is the template function that makes a list of its arguments.
func list(items ...string) []string { return items }

func parseHistory(versions ...string) []*template.Template {
	out := make([]*template.Template, len(versions))
	for i, v := range versions {
		out[i] = template.Must(template.New(fmt.Sprintf("version %d", i+1)).Option("missingkey=error").Funcs(template.FuncMap{"list": list}).Parse(v))
	}
	return out
}

// Migrate brings the database to the newest schema version and returns
// the version it found; see MigrateTo.
func Migrate(ctx context.Context, db *sql.DB, d *Dialect) (from int, err error) {
	return MigrateTo(ctx, db, d, len(history))
}

// MigrateTo brings the database to version to, each step in its own
// transaction, and returns the version it found. A database of a newer
// version than this build knows is refused: this build might misread it.
func MigrateTo(ctx context.Context, db *sql.DB, d *Dialect, to int) (from int, err error) {
	for first := true; ; first = false {
		version, err := step(ctx, db, d, to)
		if first {
			from = version
		}
		if err != nil || version >= to {
			return from, err
		}
	}
}

// step migrates the database one version forward unless it is at version
// to already, and returns the version it found.
func step(ctx context.Context, db *sql.DB, d *Dialect, to int) (version int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("starting the migration: %w", err)
	}
	defer tx.Rollback()
	if d.BeginMigration != "" {
		if _, err := tx.ExecContext(ctx, d.BeginMigration); err != nil {
			return 0, fmt.Errorf("starting the migration: %w", err)
		}
	}
	if err := tx.QueryRowContext(ctx, d.ReadVersion).Scan(&version); err != nil {
		return 0, fmt.Errorf("reading the schema version: %w", err)
	}
	if version > len(history) {
		return version, fmt.Errorf("schema version %d is newer than this build's %d: run a newer schedscope", version, len(history))
	}
	if version >= to {
		return version, nil
	}
	var ddl strings.Builder
	if err := history[version].Execute(&ddl, d); err != nil {
		return version, fmt.Errorf("migrating the schema from version %d to %d: %w", version, version+1, err)
	}
	if _, err := tx.ExecContext(ctx, ddl.String()); err != nil {
		return version, fmt.Errorf("migrating the schema from version %d to %d: %w", version, version+1, err)
	}
	if _, err := tx.ExecContext(ctx, d.WriteVersion(version+1)); err != nil {
		return version, fmt.Errorf("migrating the schema from version %d to %d: writing the version: %w", version, version+1, err)
	}
	return version, tx.Commit()
}

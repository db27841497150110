package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlstore"
	"github.com/schedscope/schedscope/pkg/sidecar/store/storetest"
	"github.com/schedscope/schedscope/test/pgserver"
)

// server is the PostgreSQL server of this package's tests; each test
// works in a database of its own.
var server *pgserver.Server

func TestMain(m *testing.M) {
	var err error
	if server, err = pgserver.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "starting PostgreSQL:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := server.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping PostgreSQL:", err)
	}
	os.Exit(code)
}

func newDatabase(t *testing.T) string {
	t.Helper()
	url, err := server.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) func(store.Options) (store.Store, error) {
			url := newDatabase(t)
			return func(o store.Options) (store.Store, error) { return Open(context.Background(), url, o) }
		},
		RetainedBytes: func(t *testing.T, s store.Store) int64 {
			n, err := s.(*Store).RetainedBytes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return n
		},
	})
}

func TestIngestBesideReaders(t *testing.T) {
	storetest.IngestBesideReaders(t, storetest.Harness{
		New: func(t *testing.T) func(store.Options) (store.Store, error) {
			url := newDatabase(t)
			return func(o store.Options) (store.Store, error) { return Open(context.Background(), url, o) }
		},
	})
}

// TestReadersHaveAStatementTimeout: the Reader's connections end a query
// by ReadLimits.Timeout on the server, as a statement timeout the dialect
// recognizes; the writers' connections have none.
func TestReadersHaveAStatementTimeout(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, newDatabase(t), store.Options{Reads: store.ReadLimits{Timeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, db := range []struct {
		name string
		db   *sql.DB
		want string
	}{{"readers", s.reads, "200ms"}, {"writers", s.db, "0"}} {
		var got string
		if err := db.db.QueryRowContext(ctx, `SHOW statement_timeout`).Scan(&got); err != nil || got != db.want {
			t.Errorf("the %s' statement_timeout: %q, %v; want %q", db.name, got, err, db.want)
		}
	}
	_, err = s.reads.ExecContext(ctx, `SELECT pg_sleep(5)`)
	if err == nil || !dialect.TimedOut(err) {
		t.Errorf("a reader's query past the statement timeout: %v, want a statement timeout", err)
	}
}

func dbVersion(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// migrateTo makes the database at url one of schema version.
func migrateTo(t *testing.T, url string, version int) {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := sqlstore.MigrateTo(context.Background(), db, &dialect, version); err != nil {
		t.Fatal(err)
	}
}

func exec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

// TestMigrations: a new database gets the newest version, opening it
// again changes nothing, and a database of a newer version is refused,
// naming both.
func TestMigrations(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	for range 2 {
		s, err := Open(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if v := dbVersion(t, url); v != store.SchemaVersion {
			t.Fatalf("schema version %d after Open, want %d", v, store.SchemaVersion)
		}
	}
	exec(t, url, `UPDATE schema_version SET version = 99`)
	_, err := Open(ctx, url, store.Options{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version 99 is newer than this build's %d", store.SchemaVersion)) {
		t.Fatalf("Open of a newer schema: error %v, want one naming both versions", err)
	}
}

// TestOpenConcurrently: sidecars starting together on a new database
// migrate it once.
func TestOpenConcurrently(t *testing.T) {
	url := newDatabase(t)
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			s, err := Open(context.Background(), url, store.Options{})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if v := dbVersion(t, url); v != store.SchemaVersion {
		t.Errorf("schema version %d, want %d", v, store.SchemaVersion)
	}
}

// TestMigrateFromVersion1: a database of schema version 1 holding
// storetest.Fixture, written with version 1's columns, is migrated on Open
// and answers every query as before; a pending pod's repeats after it fold
// from the second on, as on SQLite.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	migrateTo(t, url, 1)
	rows, err := store.EncodeRows("", "e1", storetest.Fixture())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		a := r.Attempt
		exec(t, url, `WITH a AS (INSERT INTO attempts (epoch, seq, uid, namespace, name, attempt, result, finished, size, summary, data)
				VALUES ('e1', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id)
			INSERT INTO pods (uid, namespace, name, first_seen, latest_id, finished, result) SELECT $2, $3, $4, $7, id, $7, $6 FROM a
			ON CONFLICT (uid) DO UPDATE SET latest_id = excluded.latest_id, finished = excluded.finished, result = excluded.result`,
			int64(r.Seq), a.Pod.UID, a.Pod.Namespace, a.Pod.Name, a.Attempt, string(a.Result), r.Finished, len(r.Data), string(r.Summary), r.Data)
		for _, rj := range r.Rejected {
			exec(t, url, `INSERT INTO rejections (attempt_id, finished, namespace, plugin, nodes, node_names)
				SELECT id, $2, $3, $4, $5, $6 FROM attempts WHERE seq = $1`, int64(r.Seq), r.Finished, a.Pod.Namespace, rj.Plugin, rj.Nodes, rj.Names)
		}
	}
	exec(t, url, `INSERT INTO meta VALUES ('cursor.epoch', 'e1'), ('cursor.seq', '5'), ('cursor.lost', '0')`)

	s, err := Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := dbVersion(t, url); v != store.SchemaVersion {
		t.Errorf("schema version %d after Open, want %d", v, store.SchemaVersion)
	}
	storetest.CheckUnsignedFixture(t, s)
}

// TestMigrateFromVersion2: a database of schema version 2 holding
// storetest.Fixture under cursor (e1, 5), written as version 2's Append
// wrote it (signatures included), is migrated on Open: its records and
// cursor are the unnamed cluster's and answer every query as before,
// repeats still fold into its attempts, and a named cluster stores the
// same epoch, sequences and UIDs beside them.
func TestMigrateFromVersion2(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	migrateTo(t, url, 2)
	rows, err := store.EncodeRows("", "e1", storetest.Fixture())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		a := r.Attempt
		exec(t, url, `WITH a AS (INSERT INTO attempts (epoch, seq, uid, namespace, name, attempt, result, finished, size, summary, data, signature)
				VALUES ('e1', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id)
			INSERT INTO pods (uid, namespace, name, first_seen, latest_id, finished, result) SELECT $2, $3, $4, $7, id, $7, $6 FROM a
			ON CONFLICT (uid) DO UPDATE SET latest_id = excluded.latest_id, finished = excluded.finished, result = excluded.result`,
			int64(r.Seq), a.Pod.UID, a.Pod.Namespace, a.Pod.Name, a.Attempt, string(a.Result), r.Finished, len(r.Data), string(r.Summary), r.Data, r.Signature)
		for _, rj := range r.Rejected {
			exec(t, url, `INSERT INTO rejections (attempt_id, finished, namespace, plugin, nodes, node_names)
				SELECT id, $2, $3, $4, $5, $6 FROM attempts WHERE seq = $1`, int64(r.Seq), r.Finished, a.Pod.Namespace, rj.Plugin, rj.Nodes, rj.Names)
		}
	}
	exec(t, url, `INSERT INTO meta VALUES ('cursor.epoch', 'e1'), ('cursor.seq', '5'), ('cursor.lost', '0')`)

	s, err := Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := dbVersion(t, url); v != store.SchemaVersion {
		t.Errorf("schema version %d after Open, want %d", v, store.SchemaVersion)
	}
	storetest.CheckMigratedFixture(t, s, func() (store.Store, error) { return Open(ctx, url, store.Options{Cluster: "east", AllClusters: true}) })
}

// TestMigrateFromVersion4: a database of schema version 4 holding
// storetest.Fixture under cursor (e1, 5), written as version 4's Append
// wrote it, is migrated on Open: it answers every query as before, and
// the shadow runs of the attempts stored after the migration are counted.
func TestMigrateFromVersion4(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	migrateTo(t, url, 4)
	rows, err := store.EncodeRows("", "e1", storetest.Fixture())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		a := r.Attempt
		exec(t, url, `WITH a AS (INSERT INTO attempts (cluster, epoch, seq, uid, namespace, name, attempt, result, finished, size, summary, data, signature)
				VALUES ('', 'e1', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id)
			INSERT INTO pods (cluster, uid, namespace, name, first_seen, latest_id, finished, result) SELECT '', $2, $3, $4, $7, id, $7, $6 FROM a
			ON CONFLICT (cluster, uid) DO UPDATE SET latest_id = excluded.latest_id, finished = excluded.finished, result = excluded.result`,
			int64(r.Seq), a.Pod.UID, a.Pod.Namespace, a.Pod.Name, a.Attempt, string(a.Result), r.Finished, len(r.Data), string(r.Summary), r.Data, r.Signature)
		for _, rj := range r.Rejected {
			exec(t, url, `INSERT INTO rejections (cluster, attempt_id, finished, namespace, plugin, nodes, node_names)
				SELECT '', id, $2, $3, $4, $5, $6 FROM attempts WHERE seq = $1`, int64(r.Seq), r.Finished, a.Pod.Namespace, rj.Plugin, rj.Nodes, rj.Names)
		}
	}
	exec(t, url, `INSERT INTO cursors (cluster, epoch, seq, lost) VALUES ('', 'e1', 5, 0)`)

	s, err := Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := dbVersion(t, url); v != store.SchemaVersion {
		t.Errorf("schema version %d after Open, want %d", v, store.SchemaVersion)
	}
	storetest.CheckFixture(t, s)
	storetest.CheckShadows(t, s, "e1", 6)
}

// TestOpenRejectsBadURL: a URL that does not parse is an error that does
// not repeat it (it may hold a password).
func TestOpenRejectsBadURL(t *testing.T) {
	_, err := Open(context.Background(), "postgres://u:secret@127.0.0.1:notaport/db", store.Options{})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open of a bad URL: %v, want an error without the password", err)
	}
}

// TestFoldLookupGoesByPod: with many attempts of one epoch stored, and the
// table's statistics as ingest leaves them, the planner finds whether a
// record was folded before among its pod's attempts, not by walking the
// epoch's sequences (which made storing an epoch quadratic).
func TestFoldLookupGoesByPod(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	st, err := Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const pods = 500
	if err := fillStore(ctx, st, pods); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	seq := int64(pods * attemptsPerPod)
	rows, err := conn.Query(ctx, "EXPLAIN "+dialect.FoldQuery(), "", "uid-7", "fill", seq, seq, "", "uid-7")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "attempts_cluster_epoch_seq_key") || !strings.Contains(plan, "attempts_by_pod_epoch") {
		t.Errorf("the fold lookup does not go by attempts_by_pod_epoch:\n%s", plan)
	}
}

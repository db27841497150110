package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/storetest"
	"github.com/schedscope/schedscope/pkg/stream"
)

func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMigrations(t *testing.T) {
	if len(migrations) != store.SchemaVersion {
		t.Fatalf("SQLite has %d schema versions, the store's history has %d", len(migrations), store.SchemaVersion)
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	for range 2 { // a new file, then the same file again
		st, err := Open(ctx, path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		if v := userVersion(t, path); v != store.SchemaVersion {
			t.Fatalf("schema version %d after Open, want %d", v, store.SchemaVersion)
		}
	}

	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(ctx, path, store.Options{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version 99 is newer than this build's %d", store.SchemaVersion)) {
		t.Fatalf("Open of a newer schema: error %v, want one naming both versions", err)
	}
}

// TestOpenConvertsToIncrementalVacuum: a database of schema version 1
// written without incremental vacuum (as the first release wrote them) is
// migrated and converted on Open, so that retention gives freed pages back
// to the file system.
func TestOpenConvertsToIncrementalVacuum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(migrations[0] + "; PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err := Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mode int
	if err := st.db.QueryRow("PRAGMA auto_vacuum").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if mode != 2 {
		t.Errorf("auto_vacuum %d after Open, want 2 (incremental)", mode)
	}
	if v := userVersion(t, path); v != store.SchemaVersion {
		t.Errorf("schema version %d after Open, want %d", v, store.SchemaVersion)
	}
}

// TestMigrateFromVersion1: testdata/schema-v1.db was written by the release
// before folding (schema version 1) holding storetest.Fixture. Opened by
// this build, it is migrated and answers every query as before. Attempts
// stored before the migration carry no outcome signature, so a pod's first
// repeat after it is stored and the next ones fold into that.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile("testdata/schema-v1.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "records.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if v := userVersion(t, path); v != 1 {
		t.Fatalf("testdata/schema-v1.db has schema version %d, want 1", v)
	}
	s, err := Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := userVersion(t, path); v != store.SchemaVersion {
		t.Errorf("schema version %d after Open, want %d", v, store.SchemaVersion)
	}
	storetest.CheckFixture(t, s)

	repeat := func(n int) *record.Attempt {
		return recordtest.MakeAttempt("b", "p2", "uid-2").Number(n).Finished(recordtest.Base.Add(time.Duration(n)*time.Second)).
			Unschedulable("0/2 nodes are available").Rejected("NodeResourcesFit", "Insufficient cpu", "n1", "n2").Obj()
	}
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 7}, stream.Records(6, repeat(3), repeat(4))); err != nil {
		t.Fatal(err)
	}
	sums, err := s.Attempts(ctx, store.PodSelector{UID: "uid-2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	type folded struct {
		Seq                  uint64
		Repeats, LastAttempt int
	}
	var got []folded
	for _, a := range sums {
		got = append(got, folded{a.Seq, a.Repeats, a.LastAttempt})
	}
	if diff := cmp.Diff([]folded{{6, 1, 4}, {4, 0, 0}, {2, 0, 0}}, got); diff != "" {
		t.Errorf("attempts of b/p2 (-want +got):\n%s", diff)
	}
}

// TestMigrateFromVersion2: testdata/schema-v2.db was written by the
// release before clusters (schema version 2) holding storetest.Fixture
// under cursor (e1, 5). Opened by this build it is migrated: its records
// and cursor are the unnamed cluster's and answer every query as before,
// repeats still fold into its attempts, and a named cluster stores the
// same epoch, sequences and UIDs beside them.
func TestMigrateFromVersion2(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile("testdata/schema-v2.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "records.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if v := userVersion(t, path); v != 2 {
		t.Fatalf("testdata/schema-v2.db has schema version %d, want 2", v)
	}
	s, err := Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := userVersion(t, path); v != store.SchemaVersion {
		t.Errorf("schema version %d after Open, want %d", v, store.SchemaVersion)
	}
	var free int
	if err := s.db.QueryRow("PRAGMA freelist_count").Scan(&free); err != nil {
		t.Fatal(err)
	}
	if free != 0 {
		t.Errorf("%d free pages after the migration copied the tables, want them given back to the file system", free)
	}
	storetest.CheckMigratedFixture(t, s, func() (store.Store, error) { return Open(ctx, path, store.Options{Cluster: "east"}) })
}

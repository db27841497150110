package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlstore"
	"github.com/schedscope/schedscope/pkg/sidecar/store/storetest"
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

// copyTestdata copies testdata/name, a database of schema version, into a
// temporary directory and returns the copy's path.
func copyTestdata(t *testing.T, name string, version int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "records.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if v := userVersion(t, path); v != version {
		t.Fatalf("testdata/%s has schema version %d, want %d", name, v, version)
	}
	return path
}

func TestMigrations(t *testing.T) {
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
	if _, err := sqlstore.MigrateTo(context.Background(), db, &dialect, 1); err != nil {
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
	path := copyTestdata(t, "schema-v1.db", 1)
	s, err := Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := userVersion(t, path); v != store.SchemaVersion {
		t.Errorf("schema version %d after Open, want %d", v, store.SchemaVersion)
	}
	storetest.CheckUnsignedFixture(t, s)
}

// TestMigrateFromVersion2: testdata/schema-v2.db was written by the
// release before clusters (schema version 2) holding storetest.Fixture
// under cursor (e1, 5). Opened by this build it is migrated: its records
// and cursor are the unnamed cluster's and answer every query as before,
// repeats still fold into its attempts, and a named cluster stores the
// same epoch, sequences and UIDs beside them.
func TestMigrateFromVersion2(t *testing.T) {
	ctx := context.Background()
	path := copyTestdata(t, "schema-v2.db", 2)
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
	storetest.CheckMigratedFixture(t, s, func() (store.Store, error) { return Open(ctx, path, store.Options{Cluster: "east", AllClusters: true}) })
}

// TestMigrateFromVersion4: testdata/schema-v4.db was written by the
// release before the stores shared their SQL (schema version 4), holding
// storetest.Fixture under cursor (e1, 5). Opened by this build it is
// migrated and answers every query as before, repeats fold into its
// attempts, a named cluster stores the same epoch, sequences and UIDs
// beside them, and the shadow runs of the attempts stored after the
// migration are counted.
func TestMigrateFromVersion4(t *testing.T) {
	ctx := context.Background()
	path := copyTestdata(t, "schema-v4.db", 4)
	s, err := Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := userVersion(t, path); v != store.SchemaVersion {
		t.Errorf("schema version %d after Open, want %d", v, store.SchemaVersion)
	}
	storetest.CheckMigratedFixture(t, s, func() (store.Store, error) { return Open(ctx, path, store.Options{Cluster: "east", AllClusters: true}) })
	storetest.CheckShadows(t, s, "e1", 8)
}

package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedscope/schedscope/pkg/sidecar/store"
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
		st, err := Open(ctx, path, store.Retention{})
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
	_, err = Open(ctx, path, store.Retention{})
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
	st, err := Open(context.Background(), path, store.Retention{})
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

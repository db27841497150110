package sqlite

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/sidecar/store"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.golden from the schema Open makes")

// schemaOf describes the schema of the database at path: its version,
// then every table and index as SQLite keeps it (sqlite_master), with each
// run of white space in their SQL made one space.
func schemaOf(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	var version int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "user_version %d\n", version)
	rows, err := db.Query(`SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, name, table, ddl string
		if err := rows.Scan(&typ, &name, &table, &ddl); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s on %s: %s\n", typ, name, table, strings.Join(strings.Fields(ddl), " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSchema: the schema Open makes, of a new file and of the files of
// earlier releases (schema versions 1, 2 and 4), is
// testdata/schema.golden.
func TestSchema(t *testing.T) {
	const golden = "testdata/schema.golden"
	path := filepath.Join(t.TempDir(), "records.db")
	s, err := Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	got := schemaOf(t, path)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("schema of a new file (-want +got):\n%s", diff)
	}
	for _, old := range []string{"testdata/schema-v1.db", "testdata/schema-v2.db", "testdata/schema-v4.db"} {
		data, err := os.ReadFile(old)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "records.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(context.Background(), path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if diff := cmp.Diff(string(want), schemaOf(t, path)); diff != "" {
			t.Errorf("schema of %s after Open (-want +got):\n%s", old, diff)
		}
	}
}

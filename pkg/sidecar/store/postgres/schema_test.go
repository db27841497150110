package postgres

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/schedscope/schedscope/pkg/sidecar/store"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.golden from the schema Open makes")

// schemaOf describes the schema of the database at url from PostgreSQL's
// catalogs: its version, every column (type, nullability, default,
// identity, storage), index, constraint, table with row-level security
// and policy.
func schemaOf(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "schema_version %d\n", dbVersion(t, url))
	for _, q := range []string{
		`SELECT format('column %s.%s %s notnull=%s default=%s identity=%s storage=%s', c.relname, a.attname,
				format_type(a.atttypid, a.atttypmod), a.attnotnull, COALESCE(pg_get_expr(d.adbin, d.adrelid), ''), a.attidentity, a.attstorage)
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
			LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
			ORDER BY c.relname, a.attnum`,
		`SELECT format('index %s: %s', indexname, indexdef) FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname`,
		`SELECT format('constraint %s on %s: %s', conname, conrelid::regclass, pg_get_constraintdef(oid))
			FROM pg_constraint WHERE connamespace = current_schema()::regnamespace ORDER BY conname`,
		`SELECT format('row level security on %s', relname) FROM pg_class
			WHERE relnamespace = current_schema()::regnamespace AND relrowsecurity ORDER BY relname`,
		`SELECT format('policy %s on %s: %s using %s check %s', policyname, tablename, cmd,
				COALESCE(regexp_replace(qual, '\s+', ' ', 'g'), '-'), COALESCE(regexp_replace(with_check, '\s+', ' ', 'g'), '-'))
			FROM pg_policies WHERE schemaname = current_schema() ORDER BY tablename, policyname`,
	} {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestSchema: the schema Open makes is testdata/schema.golden.
func TestSchema(t *testing.T) {
	const golden = "testdata/schema.golden"
	url := newDatabase(t)
	s, err := Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	got := schemaOf(t, url)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("schema of a new database (-want +got):\n%s", diff)
	}
}

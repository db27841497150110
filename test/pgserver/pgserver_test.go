package pgserver

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestServer: a started server answers on loopback, a created database is
// reachable, and the server comes back after Stop and Resume.
func TestServer(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url, err := s.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	query := func() (string, error) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return "", err
		}
		defer conn.Close(ctx)
		var v string
		return v, conn.QueryRow(ctx, "SHOW server_version").Scan(&v)
	}
	v, err := query()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL %s on port %d", v, s.Port)
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := query(); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := query(); err != nil {
		t.Fatalf("after Resume: %v", err)
	}
}

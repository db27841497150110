package pgserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestServerHoldsNoInheritedDescriptor: a descriptor the test process
// holds without close-on-exec (as one it inherited would be, such as a
// lock the test command runs under) does not reach the server.
func TestServerHoldsNoInheritedDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	s, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pidFile, err := os.ReadFile(filepath.Join(s.dataDir(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _, _ := strings.Cut(string(pidFile), "\n")
	entries, err := os.ReadDir(filepath.Join("/proc", pid, "fd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if target, _ := os.Readlink(filepath.Join("/proc", pid, "fd", e.Name())); target == path {
			t.Errorf("the server (pid %s) holds descriptor %s of %s", pid, e.Name(), path)
		}
	}
}

// Package pgserver runs a real PostgreSQL server for tests and benchmarks:
// initdb on a temporary directory, listening on 127.0.0.1 only, with
// trust authentication for its one user. It needs Debian's postgresql
// package (PostgreSQL 15); as root it runs the server as the postgres
// user, since initdb refuses root.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/schedscope/schedscope/test/freeport"
)

// User is the server's superuser.
const User = "schedscope"

// Server is a running PostgreSQL server.
type Server struct {
	// Dir holds the data directory, the socket and the log.
	Dir  string
	Port int
	bin  string
	// runAs is the user the server runs as when the test runs as root.
	runAs string
	dbs   atomic.Int64
}

// BinDir returns the directory of PostgreSQL's server programs: $PG_BIN,
// or the newest /usr/lib/postgresql/*/bin.
func BinDir() (string, error) {
	if dir := os.Getenv("PG_BIN"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("PostgreSQL's server programs not found in /usr/lib/postgresql/*/bin (apt-get install postgresql, or set PG_BIN)")
}

// Start initializes a new cluster in a temporary directory and starts it.
func Start(ctx context.Context) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "schedscope-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		if err := s.chownToPostgres(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	port, err := freeport.Get()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.Port = port
	if err := s.run(ctx, "initdb", "-D", s.dataDir(), "-U", User, "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.Resume(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) chownToPostgres() error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running PostgreSQL as root needs the postgres user (Debian's postgresql package creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	s.runAs = u.Username
	return os.Chown(s.Dir, uid, gid)
}

func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }

// closeInheritedOnExec marks every descriptor the test process inherited
// close-on-exec (Go opens its own so, but not those it was started with),
// so that the server, which pg_ctl detaches and which may outlive a killed
// test, holds none of them: not a lock the test command ran under.
func closeInheritedOnExec() {
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// run runs one of PostgreSQL's programs as the server's user.
func (s *Server) run(ctx context.Context, program string, args ...string) error {
	closeInheritedOnExec()
	path := filepath.Join(s.bin, program)
	var cmd *exec.Cmd
	if s.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", s.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %q: %w\n%s", program, args, err, out)
	}
	return nil
}

// Resume starts the server (again, after Stop) on the same port.
func (s *Server) Resume(ctx context.Context) error {
	// Durability across an operating system crash is not what tests
	// measure: fsync off. A stop in fast mode still loses nothing
	// committed.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c full_page_writes=off -c max_connections=200", s.Port, s.Dir)
	return s.run(ctx, "pg_ctl", "-D", s.dataDir(), "-l", filepath.Join(s.Dir, "log"), "-o", opts, "-w", "-t", "60", "start")
}

// Stop stops the server, disconnecting every client (fast mode).
func (s *Server) Stop(ctx context.Context) error {
	return s.run(ctx, "pg_ctl", "-D", s.dataDir(), "-m", "fast", "-w", "stop")
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	err := s.Stop(context.Background())
	if rmErr := os.RemoveAll(s.Dir); err == nil {
		err = rmErr
	}
	return err
}

// URL returns the URL of database db.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.Port, db)
}

// CreateDatabase creates a new, empty database and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("db%d", s.dbs.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	return s.URL(name), nil
}

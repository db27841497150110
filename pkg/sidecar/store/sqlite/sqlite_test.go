package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) func(store.Options) (store.Store, error) {
			path := filepath.Join(t.TempDir(), "records.db")
			return func(o store.Options) (store.Store, error) { return Open(context.Background(), path, o) }
		},
		RetainedBytes: func(t *testing.T, s store.Store) int64 { return filesOnDisk(t, s.(*Store).path) },
	})
}

func TestIngestBesideReaders(t *testing.T) {
	storetest.IngestBesideReaders(t, storetest.Harness{
		New: func(t *testing.T) func(store.Options) (store.Store, error) {
			path := filepath.Join(t.TempDir(), "records.db")
			return func(o store.Options) (store.Store, error) { return Open(context.Background(), path, o) }
		},
	})
}

// filesOnDisk is the size of the database file and its write-ahead log as
// the file system sees them.
func filesOnDisk(t *testing.T, path string) int64 {
	t.Helper()
	var n int64
	for _, name := range []string{path, path + "-wal"} {
		fi, err := os.Stat(name)
		if err == nil {
			n += fi.Size()
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return n
}

func openTest(t *testing.T, r store.Retention) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "records.db")
	s, err := Open(context.Background(), path, store.Options{Retention: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// TestFileAndStats: the database file is its owner's only, and Stats
// reports the bytes of the files on disk.
func TestFileAndStats(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t, store.Retention{})
	if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 5}, storetest.Fixture()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("database file mode %v (%v), want 0600", fi.Mode(), err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk := filesOnDisk(t, path); st.DiskBytes != onDisk {
		t.Errorf("Stats().DiskBytes = %d, the files hold %d", st.DiskBytes, onDisk)
	}
}

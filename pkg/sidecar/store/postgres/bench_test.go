package postgres

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
	"github.com/schedscope/schedscope/pkg/stream"
)

// BenchmarkIngest measures ingest of 5000-node records as the follower
// stores them (the scheduler's JSON and the decoded record, 16 a
// transaction) into SQLite and into PostgreSQL written by 1 and by 3
// sidecars at once (each its own connection pool and stream epoch), in
// one run. It reports records/s over all writers, and per stored attempt
// the record's bytes and the store's bytes on disk (SQLite: its files;
// PostgreSQL: its tables, indexes and out-of-line values).
func BenchmarkIngest(b *testing.B) {
	shapes := []struct {
		name       string
		newAttempt func(i int) *record.Attempt
	}{
		// What the default profile makes: 500 nodes filtered and scored
		// by 8 plugins, 4500 not evaluated (about 30 kB of JSON).
		{"default", func(i int) *record.Attempt { return recordtest.Typical(i, 5000) }},
		// A busy cluster's: 3000 rejected by three plugins, 2000 scored
		// by five (about 130 kB).
		{"busy", func(i int) *record.Attempt { return recordtest.Large(i, 5000) }},
	}
	stores := []struct {
		name    string
		writers int
	}{{"sqlite", 1}, {"postgres", 1}, {"postgres", 3}}
	for _, shape := range shapes {
		for _, st := range stores {
			b.Run(fmt.Sprintf("%s/%s/writers=%d", shape.name, st.name, st.writers), func(b *testing.B) {
				benchmarkIngest(b, st.name, st.writers, shape.newAttempt)
			})
		}
	}
}

func benchmarkIngest(b *testing.B, kind string, writers int, newAttempt func(int) *record.Attempt) {
	ctx := context.Background()
	open := func() (store.Store, error) {
		return sqlite.Open(ctx, filepath.Join(b.TempDir(), "records.db"), store.Options{})
	}
	if kind == "postgres" {
		url, err := server.CreateDatabase(ctx)
		if err != nil {
			b.Fatal(err)
		}
		open = func() (store.Store, error) { return Open(ctx, url, store.Options{}) }
	}
	const batch = 16
	// Each writer's records, encoded as the scheduler sends them.
	work := make([][]stream.Record, writers)
	for i := range b.N {
		a := newAttempt(i)
		raw, err := record.Encode(a)
		if err != nil {
			b.Fatal(err)
		}
		work[i%writers] = append(work[i%writers], stream.Record{Seq: uint64(i/writers + 1), Attempt: a, JSON: raw})
	}
	stores := make([]store.Store, writers)
	for w := range stores {
		s, err := open()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		stores[w] = s
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			epoch := fmt.Sprintf("writer-%d", w)
			records := work[w]
			for len(records) > 0 {
				n := min(batch, len(records))
				if err := stores[w].Append(ctx, v1alpha1.Cursor{Epoch: epoch, Seq: records[n-1].Seq}, records[:n]); err != nil {
					errs <- err
					return
				}
				records = records[n:]
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	stats, err := stores[0].Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if stats.Attempts != int64(b.N) {
		b.Fatalf("%d attempts stored, want %d", stats.Attempts, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(stats.Bytes)/float64(stats.Attempts), "record-bytes/attempt")
	b.ReportMetric(float64(stats.DiskBytes)/float64(stats.Attempts), "disk-bytes/attempt")
}

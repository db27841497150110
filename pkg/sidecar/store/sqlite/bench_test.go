package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/stream"
)

// BenchmarkAppend measures ingest of synthetic attempts over 5000 nodes
// (60% rejected by three plugins, 2000 scored by five), in the batches the
// follower writes. It reports records/s and the bytes stored per attempt.
func BenchmarkAppend(b *testing.B) {
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("nodes=5000/batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "db"), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			templates := make([]*record.Attempt, 32)
			for i := range templates {
				templates[i] = recordtest.Large(i, 5000)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			var seq uint64
			for n := 0; n < b.N; n += batch {
				items := make([]stream.Record, 0, batch)
				for j := 0; j < batch && n+j < b.N; j++ {
					seq++
					a := *templates[seq%uint64(len(templates))]
					a.Pod.UID = fmt.Sprintf("uid-%d", seq)
					items = append(items, stream.Record{Seq: seq, Attempt: &a})
				}
				if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: seq}, items); err != nil {
					b.Fatal(err)
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			st, err := s.Stats(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var rejectionBytes int64
			if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(LENGTH(node_names)), 0) FROM rejections`).Scan(&rejectionBytes); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			b.ReportMetric(float64(st.Bytes)/float64(st.Attempts), "record-bytes/attempt")
			b.ReportMetric(float64(st.Bytes+rejectionBytes)/float64(st.Attempts), "stored-bytes/attempt")
		})
	}
}

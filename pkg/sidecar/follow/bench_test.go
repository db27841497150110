package follow

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
	"github.com/schedscope/schedscope/pkg/stream"
)

// BenchmarkFollow measures end-to-end ingest of 5000-node attempts: the
// scheduler's stream buffer encodes them, the follower decodes them from a
// watch over HTTP and stores them in SQLite. Two shapes: the attempts
// kube-scheduler's default profile makes (500 nodes filtered and scored,
// 4500 not evaluated), and a busy cluster's with 3000 nodes rejected and
// 2000 scored.
func BenchmarkFollow(b *testing.B) {
	for _, shape := range []struct {
		name string
		make func(i, nodes int) *record.Attempt
	}{
		{"default-profile", recordtest.Typical},
		{"busy-cluster", recordtest.Large},
	} {
		b.Run("nodes=5000/"+shape.name, func(b *testing.B) {
			templates := make([]*record.Attempt, 32)
			for i := range templates {
				templates[i] = shape.make(i, 5000)
			}
			benchmarkFollow(b, templates)
		})
	}
}

func benchmarkFollow(b *testing.B, templates []*record.Attempt) {
	buf := stream.NewBuffer(b.N+1, math.MaxInt, "e1")
	sched := &scheduler{buf: buf}
	sched.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*sched.handler.Load()).ServeHTTP(w, r)
	}))
	defer sched.srv.Close()
	sched.up()
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	opts := DefaultOptions(sched.url())
	f, err := New(opts, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return f.Status().Watching, nil
	}); err != nil {
		b.Fatal("no watch")
	}

	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		a := *templates[i%len(templates)]
		a.Pod.UID = fmt.Sprintf("uid-%d", i)
		if err := buf.Add(&a, fmt.Sprintf("%032x", i)); err != nil {
			b.Fatal(err)
		}
	}
	want := uint64(b.N)
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := st.Cursor(ctx)
		return c.Seq == want, err
	}); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	c, _ := st.Cursor(ctx)
	if c.Lost != 0 {
		b.Fatalf("%d records lost", c.Lost)
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(stats.Bytes)/float64(stats.Attempts), "record-bytes/attempt")
}

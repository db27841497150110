package follow

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/sidecar/metrics"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/postgres"
	"github.com/schedscope/schedscope/test/pgserver"
)

// TestPostgresFaultsLoseNothing follows a stream into a real PostgreSQL
// while the scheduler keeps emitting: PostgreSQL is restarted mid-ingest,
// then the sidecar is stopped mid-batch and started again. The stream
// still holds every record, so stored + lost = emitted with lost = 0:
// every record is stored exactly once.
func TestPostgresFaultsLoseNothing(t *testing.T) {
	ctx := context.Background()
	server, err := pgserver.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	url, err := server.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	open := func() store.Store {
		s, err := postgres.Open(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	const emitted = 600
	sched := newScheduler(t, emitted, "e1")
	st := open()
	r := follow(t, sched.url(), st, nil)
	emit := func(n int) {
		for range n / 10 {
			sched.add(10)
			time.Sleep(2 * time.Millisecond)
		}
	}

	emit(200)
	if err := server.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	emit(100) // while PostgreSQL is down
	if err := server.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	emit(100)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 400})
	if got := testutil.ToFloat64(r.metrics.IngestErrors.WithLabelValues(metrics.StageStore)); got == 0 {
		t.Error("no store error counted while PostgreSQL was down: the restart did not hit ingest")
	}

	// The sidecar stopped while records arrive: the batch it was storing
	// is rolled back with its cursor, and read again after the restart.
	go emit(200)
	time.Sleep(50 * time.Millisecond)
	r.stop()
	st.Close()
	st = open()
	restarted := follow(t, sched.url(), st, nil)
	// The test ends only once the restarted sidecar has read the stored
	// cursor, which may need a new connection: it may find every record
	// stored already.
	eventually(t, "the restarted sidecar reading the stored cursor", func() bool { return restarted.f.Status().Cursor.Epoch == "e1" })
	eventually(t, "every record emitted", func() bool { return sched.buf.Last() == emitted })
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: emitted})
	if diff := cmp.Diff(seqRange(1, emitted), storedSeqs(t, st)); diff != "" {
		t.Errorf("stored sequences (-want +got):\n%s", diff)
	}
}

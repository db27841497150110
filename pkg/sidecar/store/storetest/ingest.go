package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/stream"
)

// Ingest beside readers: the scenario's sizes.
const (
	// seeded attempts over seedNodes nodes make the readers' queries
	// expensive: a full scan of the rejection index by node takes a
	// large part of readTimeout.
	seeded    = 3000
	seedNodes = 200
	// readers loop over the most expensive queries the Reader has, on
	// readConns connections, each query bounded by readTimeout on the
	// server (where it has a statement timeout) and by a deadline a
	// tenth later (the API's query timeout).
	readers     = 16
	readConns   = 2
	readTimeout = 500 * time.Millisecond
	// batches of batchSize records are appended one after another while
	// the readers run.
	batches   = 150
	batchSize = 16
	// maxAppendP50 and maxAppendP99 bound the median and the 99th
	// percentile of an Append's latency. An Append alone takes
	// milliseconds, and tens to a hundred or two at the median on a loaded
	// machine whose CPUs it shares with the readers (under the race
	// detector too); behind readers holding every connection of a shared
	// pool it waits for their queries: a second at the median, seconds at
	// the 99th percentile.
	maxAppendP50 = 400 * time.Millisecond
	maxAppendP99 = 2 * time.Second
)

// IngestBesideReaders asserts that the writer never waits behind readers:
// while readers run the most expensive Reader queries in a loop, on as
// many connections as the store gives them, the 99th percentile of
// Append's latency stays under maxAppendP99, every record appended is
// stored, and the readers' queries that ran past their deadline fail with
// store.ErrQueryTimeout.
func IngestBesideReaders(t *testing.T, h Harness) {
	ctx := context.Background()
	s, err := h.New(t)(store.Options{Reads: store.ReadLimits{MaxConns: readConns, Timeout: readTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var seq uint64
	for seq < seeded {
		items := make([]stream.Record, 0, 100)
		for range 100 {
			seq++
			items = append(items, stream.Record{Seq: seq, Attempt: recordtest.Large(int(seq), seedNodes)})
		}
		if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: seq}, items); err != nil {
			t.Fatal(err)
		}
	}

	readCtx, stopReading := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var queries, timeouts atomic.Int64
	readerErrs := make(chan error, readers)
	for i := range readers {
		wg.Go(func() {
			for n := i; readCtx.Err() == nil; n++ {
				err := expensiveQuery(readCtx, s, n)
				queries.Add(1)
				switch {
				case err == nil || readCtx.Err() != nil:
				case errors.Is(err, store.ErrQueryTimeout):
					timeouts.Add(1)
				default:
					readerErrs <- err
					return
				}
			}
		})
	}

	latencies := make([]time.Duration, 0, batches)
	for range batches {
		items := make([]stream.Record, 0, batchSize)
		for range batchSize {
			seq++
			a := recordtest.MakeAttempt("ingest", fmt.Sprintf("p%d", seq), fmt.Sprintf("ingest-%d", seq)).
				Finished(recordtest.Base.Add(time.Duration(seq)*time.Millisecond)).Unschedulable("0/2 nodes are available").
				Rejected("NodeResourcesFit", "Insufficient cpu", "n1", "n2").Obj()
			items = append(items, stream.Record{Seq: seq, Attempt: a})
		}
		start := time.Now()
		if err := s.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: seq}, items); err != nil {
			t.Fatalf("appending beside readers: %v", err)
		}
		latencies = append(latencies, time.Since(start))
	}
	stopReading()
	wg.Wait()
	close(readerErrs)
	for err := range readerErrs {
		t.Errorf("a reader's query failed with something else than store.ErrQueryTimeout: %v", err)
	}

	slices.Sort(latencies)
	at := func(p int) time.Duration { return latencies[(len(latencies)-1)*p/100] }
	t.Logf("Append of %d records beside %d readers (%d queries, %d past their deadline): p50 %v, p90 %v, p99 %v, max %v",
		batchSize, readers, queries.Load(), timeouts.Load(), at(50), at(90), at(99), latencies[len(latencies)-1])
	if p50 := at(50); p50 > maxAppendP50 {
		t.Errorf("Append's median latency beside readers is %v, want at most %v", p50, maxAppendP50)
	}
	if p99 := at(99); p99 > maxAppendP99 {
		t.Errorf("Append's p99 latency beside readers is %v, want at most %v", p99, maxAppendP99)
	}
	if queries.Load() < readers {
		t.Errorf("readers ran %d queries, want at least %d: they did not load the store", queries.Load(), readers)
	}

	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(seeded + batches*batchSize); st.Attempts != want {
		t.Errorf("stored %d attempts, want %d: records were lost", st.Attempts, want)
	}
	if c, err := s.Cursor(ctx); err != nil || c.Seq != seq {
		t.Errorf("Cursor() = %+v, %v; want sequence %d", c, err, seq)
	}
	expired, cancel := context.WithDeadline(ctx, time.Now())
	defer cancel()
	if _, err := s.Rejections(expired, store.RejectionQuery{By: v1alpha1.ByNode}); !errors.Is(err, store.ErrQueryTimeout) {
		t.Errorf("Rejections past its deadline: got %v, want store.ErrQueryTimeout", err)
	}
}

// expensiveQuery runs the n-th of the Reader's most expensive queries,
// bounded by readTimeout: every rejection by node, every pod, the stats.
func expensiveQuery(ctx context.Context, s store.Reader, n int) error {
	ctx, cancel := context.WithTimeout(ctx, readTimeout*11/10)
	defer cancel()
	var err error
	switch n % 3 {
	case 0:
		_, err = s.Rejections(ctx, store.RejectionQuery{By: v1alpha1.ByNode})
	case 1:
		_, err = s.Pods(ctx, store.PodListOptions{})
	default:
		_, err = s.Stats(ctx)
	}
	return err
}

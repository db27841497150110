package follow

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/metrics"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
	"github.com/schedscope/schedscope/pkg/stream"
)

// scheduler is a record stream served by the real stream.Server over HTTP.
// Its handler can be swapped to simulate a restart (a new epoch) or an
// outage.
type scheduler struct {
	t       *testing.T
	srv     *httptest.Server
	handler atomic.Pointer[http.Handler]
	buf     *stream.Buffer
}

func newScheduler(t *testing.T, size int, epoch string) *scheduler {
	t.Helper()
	s := &scheduler{t: t}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*s.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	s.restart(size, epoch)
	return s
}

// restart replaces the stream with an empty one in epoch and drops the
// open connections.
func (s *scheduler) restart(size int, epoch string) {
	s.buf = stream.NewBuffer(size, stream.DefaultBufferBytes, epoch)
	var h http.Handler = stream.NewServer(s.buf, 50*time.Millisecond)
	s.handler.Store(&h)
	s.srv.CloseClientConnections()
}

// down makes every request fail with 503 until restart.
func (s *scheduler) down() {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "scheduler is down", http.StatusServiceUnavailable)
	})
	s.handler.Store(&h)
	s.srv.CloseClientConnections()
}

func (s *scheduler) up() {
	var h http.Handler = stream.NewServer(s.buf, 50*time.Millisecond)
	s.handler.Store(&h)
}

func (s *scheduler) url() string { return s.srv.URL + stream.Path }

// add appends n attempts of pod ns/p, numbered from the buffer's next
// sequence and traced as traceOf their number.
func (s *scheduler) add(n int) {
	for range n {
		next := int(s.buf.Last()) + 1
		if err := s.buf.Add(recordtest.MakeAttempt("ns", "p", "uid").Number(next).Obj(), traceOf(next)); err != nil {
			s.t.Fatal(err)
		}
	}
}

type running struct {
	f       *Follower
	metrics *metrics.Metrics
	reg     *prometheus.Registry
	stop    func()
}

func follow(t *testing.T, url string, w store.Writer, tune func(*Options)) *running {
	t.Helper()
	opts := DefaultOptions(url)
	opts.Backoff = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 100 * time.Millisecond}
	opts.IdleTimeout = 5 * time.Second
	if tune != nil {
		tune(&opts)
	}
	reg := prometheus.NewRegistry()
	m := metrics.NewMetrics(reg)
	f, err := New(opts, w, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &running{f: f, metrics: m, reg: reg, stop: stop}
}

func openStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func waitCursor(t *testing.T, s store.Reader, want v1alpha1.Cursor) {
	t.Helper()
	var got v1alpha1.Cursor
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = s.Cursor(ctx)
		return got == want, err
	})
	if err != nil {
		t.Fatalf("waiting for cursor %+v, have %+v: %v", want, got, err)
	}
}

// eventually waits for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// storedSeqs returns the sequences of the stored attempts of pod ns/p in
// the order they were stored.
func storedSeqs(t *testing.T, s store.Reader) []uint64 {
	t.Helper()
	as, err := s.Attempts(context.Background(), store.PodSelector{Namespace: "ns", Name: "p"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint64, len(as))
	for i, a := range as {
		out[len(as)-1-i] = a.Seq
		if a.Attempt != int(a.Seq) || a.TraceID != traceOf(a.Attempt) {
			t.Errorf("record %d holds attempt %d of trace %q: records were mixed up", a.Seq, a.Attempt, a.TraceID)
		}
	}
	return out
}

// traceOf is the trace ID of attempt n.
func traceOf(n int) string { return fmt.Sprintf("%032x", n) }

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestListThenWatchInOrder(t *testing.T) {
	sched := newScheduler(t, 100, "e1")
	sched.add(3)
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	r := follow(t, sched.url(), st, nil)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 3})

	// Everything after the list comes through the watch.
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return r.f.Status().Watching, nil
	})
	if err != nil {
		t.Fatal("the follower never opened a watch")
	}
	sched.add(20)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 23})
	if diff := cmp.Diff(seqRange(1, 23), storedSeqs(t, st)); diff != "" {
		t.Errorf("stored sequences (-want +got):\n%s", diff)
	}
	// The metric follows the commit the cursor came from.
	eventually(t, "23 records received", func() bool { return testutil.ToFloat64(r.metrics.RecordsReceived) == 23 })
	if got := testutil.ToFloat64(r.metrics.RecordsLost); got != 0 {
		t.Errorf("records lost %v, want 0", got)
	}
}

func TestRelistCountsExactGap(t *testing.T) {
	sched := newScheduler(t, 5, "e1")
	sched.add(3)
	path := filepath.Join(t.TempDir(), "db")
	st := openStore(t, path)
	r := follow(t, sched.url(), st, nil)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 3})
	r.stop()

	// While the sidecar is away the 5-record buffer overflows: records
	// 4..23 are written and only 19..23 remain.
	sched.add(20)
	r = follow(t, sched.url(), st, nil)
	const lost = 19 - 3 - 1
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 23, Lost: lost})
	if diff := cmp.Diff(append(seqRange(1, 3), seqRange(19, 23)...), storedSeqs(t, st)); diff != "" {
		t.Errorf("stored sequences (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(r.metrics.RecordsLost); got != lost {
		t.Errorf("records lost metric %v, want %d", got, lost)
	}
	if got := testutil.ToFloat64(r.metrics.Relists); got != 1 {
		t.Errorf("relists %v, want 1", got)
	}
	eventually(t, "the status to show the gap", func() bool {
		s := r.f.Status()
		return s.LastGap == lost && s.Cursor.Lost == lost
	})
	eventually(t, "the 5 records after the gap", func() bool { return testutil.ToFloat64(r.metrics.RecordsReceived) == 5 })
	want := `
# HELP schedscope_follower_epoch_changes_total Times the record stream's epoch changed (scheduler restart or new leader).
# TYPE schedscope_follower_epoch_changes_total counter
schedscope_follower_epoch_changes_total 0
# HELP schedscope_follower_records_lost_total Decision records the scheduler dropped before the sidecar could read them.
# TYPE schedscope_follower_records_lost_total counter
schedscope_follower_records_lost_total 15
# HELP schedscope_follower_records_received_total Decision records received from the scheduler's record stream.
# TYPE schedscope_follower_records_received_total counter
schedscope_follower_records_received_total 5
# HELP schedscope_follower_relists_total Relists after the scheduler answered 410 Gone.
# TYPE schedscope_follower_relists_total counter
schedscope_follower_relists_total 1
`
	if err := testutil.GatherAndCompare(r.reg, strings.NewReader(want),
		"schedscope_follower_epoch_changes_total", "schedscope_follower_records_lost_total",
		"schedscope_follower_records_received_total", "schedscope_follower_relists_total"); err != nil {
		t.Error(err)
	}
}

// gatedStore blocks Append while the gate is closed.
type gatedStore struct {
	store.Writer
	mu   sync.Mutex
	gate chan struct{}
}

func (g *gatedStore) close() { g.mu.Lock(); g.gate = make(chan struct{}); g.mu.Unlock() }
func (g *gatedStore) open()  { g.mu.Lock(); close(g.gate); g.gate = nil; g.mu.Unlock() }

func (g *gatedStore) Append(ctx context.Context, c v1alpha1.Cursor, as []stream.Record) error {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return g.Writer.Append(ctx, c, as)
}

func TestWatcherFallingBehindLosesExactlyWhatItMissed(t *testing.T) {
	sched := newScheduler(t, 8, "e1")
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	gs := &gatedStore{Writer: st}
	r := follow(t, sched.url(), gs, func(o *Options) { o.MaxBatch = 1 })
	sched.add(1)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 1})

	// The sidecar stalls on its store while the scheduler writes records
	// too big for the connection to absorb: the server's writer blocks,
	// its buffer overflows and it ends the watch.
	gs.close()
	big := strings.Repeat("x", 64<<10)
	const total = 300
	for i := 2; i <= total; i++ {
		a := recordtest.MakeAttempt("ns", "p", "uid").Number(i).Obj()
		a.Message = big
		if err := sched.buf.Add(a, traceOf(i)); err != nil {
			t.Fatal(err)
		}
	}
	gs.open()

	var c v1alpha1.Cursor
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		c, err = st.Cursor(ctx)
		return c.Seq == total, err
	})
	if err != nil {
		t.Fatalf("cursor %+v never reached %d: %v", c, total, err)
	}
	stored := storedSeqs(t, st)
	if c.Lost == 0 {
		t.Fatalf("nothing was lost; the test did not make the watcher fall behind")
	}
	if got := uint64(len(stored)) + c.Lost; got != total {
		t.Errorf("stored %d + lost %d = %d, want every one of the %d records accounted for once", len(stored), c.Lost, got, total)
	}
	if got := testutil.ToFloat64(r.metrics.RecordsLost); got != float64(c.Lost) {
		t.Errorf("records lost metric %v, stored total %d", got, c.Lost)
	}
	for i := 1; i < len(stored); i++ {
		if stored[i] <= stored[i-1] {
			t.Fatalf("stored out of order: %v", stored)
		}
	}
}

func TestEpochChangeStartsOverWithoutGap(t *testing.T) {
	sched := newScheduler(t, 100, "e1")
	sched.add(10)
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	r := follow(t, sched.url(), st, nil)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 10})

	// The scheduler restarts: a new epoch whose sequences start again at 1
	// (behind the follower's 10, so a client that ignored the epoch would
	// be lost).
	sched.restart(100, "e2")
	sched.add(3)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e2", Seq: 3})
	if got := testutil.ToFloat64(r.metrics.EpochChanges); got != 1 {
		t.Errorf("epoch changes %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.metrics.RecordsLost); got != 0 {
		t.Errorf("records lost %v, want 0", got)
	}
	as, err := st.Attempts(context.Background(), store.PodSelector{Namespace: "ns", Name: "p"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range as {
		got = append(got, fmt.Sprintf("%s/%d", a.Epoch, a.Seq))
	}
	want := []string{"e2/3", "e2/2", "e2/1", "e1/10", "e1/9", "e1/8", "e1/7", "e1/6", "e1/5", "e1/4", "e1/3", "e1/2", "e1/1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored records (-want +got):\n%s", diff)
	}
}

func TestReconnectsAfterOutage(t *testing.T) {
	sched := newScheduler(t, 100, "e1")
	sched.add(2)
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	sched.down()
	r := follow(t, sched.url(), st, nil)
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(r.metrics.IngestErrors.WithLabelValues(metrics.StageConnect)) >= 3, nil
	})
	if err != nil {
		t.Fatalf("the follower did not retry while the scheduler was down")
	}
	if s := r.f.Status(); !strings.Contains(s.LastError, "503") {
		t.Errorf("last error %q, want the 503", s.LastError)
	}
	sched.up()
	sched.add(2)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 4})
	if diff := cmp.Diff(seqRange(1, 4), storedSeqs(t, st)); diff != "" {
		t.Errorf("stored sequences (-want +got):\n%s", diff)
	}
}

func TestSidecarRestartLosesNothing(t *testing.T) {
	sched := newScheduler(t, 100, "e1")
	sched.add(5)
	path := filepath.Join(t.TempDir(), "db")
	st := openStore(t, path)
	r := follow(t, sched.url(), st, nil)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 5})
	r.stop()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	sched.add(5)
	st = openStore(t, path)
	r = follow(t, sched.url(), st, nil)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 10})
	if diff := cmp.Diff(seqRange(1, 10), storedSeqs(t, st)); diff != "" {
		t.Errorf("stored sequences (-want +got):\n%s", diff)
	}
	eventually(t, "the restarted follower received the 5 new records", func() bool { return testutil.ToFloat64(r.metrics.RecordsReceived) == 5 })
	// ... and no more: nothing was received twice.
	if got := testutil.ToFloat64(r.metrics.RecordsReceived); got != 5 {
		t.Errorf("the restarted follower received %v records, want only the 5 new ones", got)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		wantErr string
	}{
		{name: "ok", url: "http://127.0.0.1:10262/v1/records"},
		{name: "bad scheme", url: "ftp://x/v1/records", wantErr: "scheme must be http or https"},
		{name: "unparsable", url: "http://[::1", wantErr: "stream URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(DefaultOptions(tt.url), nil, nil)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// countingStore records the size of each Append.
type countingStore struct {
	store.Writer
	mu      sync.Mutex
	batches []int
}

func (c *countingStore) Append(ctx context.Context, cur v1alpha1.Cursor, as []stream.Record) error {
	c.mu.Lock()
	c.batches = append(c.batches, len(as))
	c.mu.Unlock()
	return c.Writer.Append(ctx, cur, as)
}

func TestListIsStoredInBatches(t *testing.T) {
	sched := newScheduler(t, 1000, "e1")
	sched.add(100)
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	cs := &countingStore{Writer: st}
	follow(t, sched.url(), cs, func(o *Options) { o.MaxBatch = 8 })
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 100})
	cs.mu.Lock()
	defer cs.mu.Unlock()
	total := 0
	for _, n := range cs.batches {
		if n > 8 {
			t.Errorf("a batch of %d records, want at most 8", n)
		}
		total += n
	}
	if total != 100 {
		t.Errorf("stored %d records in %v, want 100", total, cs.batches)
	}
	if diff := cmp.Diff(seqRange(1, 100), storedSeqs(t, st)); diff != "" {
		t.Errorf("stored sequences (-want +got):\n%s", diff)
	}
}

func TestStalledListIsAbandoned(t *testing.T) {
	sched := newScheduler(t, 100, "e1")
	sched.add(2)
	var stalls atomic.Int32
	stalls.Store(1)
	real := stream.NewServer(sched.buf, 50*time.Millisecond)
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "" && stalls.Add(-1) >= 0 {
			// Send half a list, then hang.
			_, _ = w.Write([]byte(`{"epoch":"e1","seq":2,"oldest":1,"items":[`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		real.ServeHTTP(w, r)
	})
	sched.handler.Store(&h)
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	r := follow(t, sched.url(), st, func(o *Options) { o.IdleTimeout = 200 * time.Millisecond })
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 2})
	if s := r.f.Status(); !strings.Contains(s.LastError, "the list stalled") {
		t.Errorf("last error %q, want the abandoned list", s.LastError)
	}
}

func TestFirstContactAfterWrapCountsNothing(t *testing.T) {
	sched := newScheduler(t, 5, "e1")
	sched.add(12) // 8..12 remain
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	r := follow(t, sched.url(), st, nil)
	waitCursor(t, st, v1alpha1.Cursor{Epoch: "e1", Seq: 12})
	if diff := cmp.Diff(seqRange(8, 12), storedSeqs(t, st)); diff != "" {
		t.Errorf("stored sequences (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(r.metrics.RecordsLost); got != 0 {
		t.Errorf("records lost %v, want 0: they predate the sidecar", got)
	}
}

// TestUnknownFormatVersionIsRefused: a list or a watch of a record format
// version the sidecar does not read stores nothing of it and moves the
// cursor no further; it is counted as a decode error and reported as the
// last error, naming the version, and the follower keeps retrying.
func TestUnknownFormatVersionIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name       string
		list       string
		watch      string
		wantCursor v1alpha1.Cursor
	}{
		{
			name: "list",
			list: `{"version":2,"epoch":"e1","seq":1,"oldest":1,"newest":1,"items":[{"seq":1,"object":{}}]}`,
		},
		{
			name:       "watch",
			watch:      `{"type":"ADDED","version":2,"seq":3,"object":{}}` + "\n",
			wantCursor: v1alpha1.Cursor{Epoch: "e1", Seq: 2},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sched := newScheduler(t, 100, "e1")
			sched.add(2)
			real := stream.NewServer(sched.buf, 50*time.Millisecond)
			var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				watch := r.URL.Query().Get("watch") != ""
				switch {
				case !watch && tt.list != "":
					_, _ = w.Write([]byte(tt.list))
				case watch && tt.watch != "":
					_, _ = w.Write([]byte(tt.watch))
				default:
					real.ServeHTTP(w, r)
				}
			})
			sched.handler.Store(&h)
			st := openStore(t, filepath.Join(t.TempDir(), "db"))
			r := follow(t, sched.url(), st, nil)
			eventually(t, "two decode errors", func() bool {
				return testutil.ToFloat64(r.metrics.IngestErrors.WithLabelValues(metrics.StageDecode)) >= 2
			})
			r.stop()
			if s := r.f.Status(); !strings.Contains(s.LastError, "record format version 2 is not one this build reads (it reads versions [1])") {
				t.Errorf("last error %q, want the version refused", s.LastError)
			}
			if c, err := st.Cursor(context.Background()); err != nil || c != tt.wantCursor {
				t.Errorf("cursor %+v, %v; want %+v", c, err, tt.wantCursor)
			}
			if got := testutil.ToFloat64(r.metrics.RecordsReceived); got != float64(tt.wantCursor.Seq) {
				t.Errorf("records received %v, want %d", got, tt.wantCursor.Seq)
			}
		})
	}
}

package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/sidecar/metrics"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/stream"
)

// Options configure a Follower.
type Options struct {
	// URL is the record stream, e.g. http://127.0.0.1:10262/v1/records.
	URL string
	// Client makes the requests; nil means a client with no overall timeout
	// (watches are long) and default transport.
	Client *http.Client
	// TokenFile holds a bearer token sent with each request, read again for
	// each (re)connection so that a rotated token is used; empty sends none.
	// A token needs an https URL.
	TokenFile string
	// Backoff paces reconnections while the scheduler cannot be reached.
	Backoff wait.Backoff
	// IdleTimeout restarts a watch that sent nothing, not even a bookmark,
	// for that long.
	IdleTimeout time.Duration
	// MaxBatch bounds the records stored in one transaction.
	MaxBatch int
}

// DefaultOptions returns the defaults for url.
func DefaultOptions(url string) Options {
	return Options{
		URL:         url,
		Backoff:     wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 30 * time.Second},
		IdleTimeout: time.Minute,
		MaxBatch:    256,
	}
}

// Follower follows a record stream into a store.
type Follower struct {
	opts    Options
	client  *stream.Client
	store   store.Writer
	metrics *metrics.Metrics

	mu     sync.Mutex
	status v1alpha1.FollowerStatus
}

// New returns a follower; m may be nil.
func New(opts Options, w store.Writer, m *metrics.Metrics) (*Follower, error) {
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	client, err := stream.NewClient(opts.URL, opts.Client, stream.WithTokenFile(opts.TokenFile))
	if err != nil {
		return nil, err
	}
	if opts.MaxBatch < 1 {
		opts.MaxBatch = 1
	}
	if opts.IdleTimeout <= 0 {
		return nil, fmt.Errorf("idle timeout %v must be positive", opts.IdleTimeout)
	}
	if m == nil {
		m = metrics.NewMetrics(prometheus.NewRegistry())
	}
	return &Follower{opts: opts, client: client, store: w, metrics: m}, nil
}

// Status returns the follower's status.
func (f *Follower) Status() v1alpha1.FollowerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *Follower) update(fn func(s *v1alpha1.FollowerStatus)) {
	f.mu.Lock()
	fn(&f.status)
	f.mu.Unlock()
}

// Run follows the stream until ctx ends.
func (f *Follower) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("url", f.opts.URL)
	ctx = klog.NewContext(ctx, logger)
	cur, err := f.store.Cursor(ctx)
	if err != nil {
		return fmt.Errorf("reading the stored cursor: %w", err)
	}
	f.update(func(s *v1alpha1.FollowerStatus) { s.Cursor = cur })
	logger.V(2).Info("Following the record stream", "epoch", cur.Epoch, "seq", cur.Seq)
	backoff := f.opts.Backoff
	for {
		progressed, err := f.session(ctx, &cur)
		if ctx.Err() != nil {
			return nil
		}
		if progressed {
			backoff = f.opts.Backoff
		}
		if err == nil {
			continue
		}
		logger.Error(err, "Following the record stream", "epoch", cur.Epoch, "seq", cur.Seq)
		f.update(func(s *v1alpha1.FollowerStatus) {
			s.LastError, s.LastErrorAt, s.Watching = err.Error(), time.Now(), false
		})
		t := time.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// errGone ends a watch that the server answered with 410 Gone.
var errGone = errors.New("gone")

// session lists, then watches until the stream ends badly or asks for a
// relist. It returns whether anything was read, and nil when a relist
// should follow right away.
func (f *Follower) session(ctx context.Context, cur *v1alpha1.Cursor) (progressed bool, err error) {
	if err := f.list(ctx, cur); err != nil {
		return false, err
	}
	for {
		err := f.watch(ctx, cur)
		switch {
		case errors.Is(err, errGone):
			return true, nil
		case err != nil:
			return true, err
		}
		// The server ended the watch: watch again from where we are; a
		// server that dropped us answers 410 and we relist.
	}
}

// request asks for the records after the cursor. On first contact a list
// without since returns whatever is buffered.
func request(cur *v1alpha1.Cursor, watch bool) stream.Request {
	req := stream.Request{Watch: watch, Epoch: cur.Epoch}
	if cur.Epoch != "" || watch {
		since := cur.Seq
		req.Since = &since
	}
	return req
}

// open sends a request; errors other than 410 Gone are counted.
func (f *Follower) open(ctx context.Context, cur *v1alpha1.Cursor, watch bool) (io.ReadCloser, *stream.GoneError, error) {
	body, err := f.client.Open(ctx, request(cur, watch))
	var gone *stream.GoneError
	switch {
	case err == nil:
		return body, nil, nil
	case errors.As(err, &gone):
		return nil, gone, nil
	case errors.Is(err, stream.ErrMalformed):
		f.metrics.IngestErrors.WithLabelValues(metrics.StageDecode).Inc()
	default:
		f.metrics.IngestErrors.WithLabelValues(metrics.StageConnect).Inc()
	}
	return nil, nil, err
}

// maxGoneRetries bounds consecutive 410 answers to one list: each moves the
// cursor to the oldest buffered record, so more than a few means the
// scheduler drops records faster than a list can fetch them.
const maxGoneRetries = 10

func (f *Follower) list(ctx context.Context, cur *v1alpha1.Cursor) error {
	for range maxGoneRetries {
		relist, err := f.listOnce(ctx, cur)
		if err != nil || !relist {
			return err
		}
	}
	return fmt.Errorf("list answered 410 Gone %d times in a row", maxGoneRetries)
}

// listOnce stores the records a list returns. relist is true when the list
// must be repeated: it answered 410 Gone, or the epoch changed.
func (f *Follower) listOnce(ctx context.Context, cur *v1alpha1.Cursor) (relist bool, err error) {
	// A list may be long, but must not stall: it is abandoned when nothing
	// arrives for IdleTimeout.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := time.AfterFunc(f.opts.IdleTimeout, cancel)
	defer idle.Stop()
	body, gone, err := f.open(lctx, cur, false)
	if gone != nil {
		return true, f.gone(ctx, cur, &gone.Gone)
	}
	if err != nil {
		return false, err
	}
	defer body.Close()
	changed, err := f.ingestList(ctx, cur, &idleReader{r: body, timer: idle, timeout: f.opts.IdleTimeout})
	stalled := lctx.Err() != nil && ctx.Err() == nil
	switch {
	case err == nil:
	case stalled:
		f.metrics.IngestErrors.WithLabelValues(metrics.StageConnect).Inc()
		return false, fmt.Errorf("the list stalled: nothing received for %v: %w", f.opts.IdleTimeout, err)
	case isStoreError(err) || ctx.Err() != nil:
		return false, err // counted, or shutting down
	default:
		f.metrics.IngestErrors.WithLabelValues(metrics.StageDecode).Inc()
		return false, err
	}
	f.touch()
	if changed != "" {
		return true, f.epochChanged(ctx, cur, changed)
	}
	return false, nil
}

// idleReader restarts timer on every read that returns data.
type idleReader struct {
	r       io.Reader
	timer   *time.Timer
	timeout time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.timeout)
	}
	return n, err
}

// epochChange stops the decoding of a list from another epoch.
type epochChange struct{ epoch string }

func (e *epochChange) Error() string { return fmt.Sprintf("the stream is now in epoch %q", e.epoch) }

// ingestList stores the records of a list response as they are decoded, a
// batch at a time. It returns the list's epoch if it is not the cursor's.
func (f *Follower) ingestList(ctx context.Context, cur *v1alpha1.Cursor, body io.Reader) (newEpoch string, err error) {
	batch := make([]stream.Record, 0, f.opts.MaxBatch)
	checked := false
	check := func(epoch string, first *stream.Record) error {
		if checked {
			return nil
		}
		if cur.Epoch != "" && epoch != cur.Epoch {
			return &epochChange{epoch: epoch}
		}
		if cur.Epoch == "" && first != nil && first.Seq > cur.Seq+1 {
			// First contact: the records before the first one listed
			// predate the follower; they are not lost.
			cur.Seq = first.Seq - 1
		}
		cur.Epoch, checked = epoch, true
		return nil
	}
	h, err := stream.DecodeList(body, func(epoch string, r stream.Record) error {
		if err := check(epoch, &r); err != nil {
			return err
		}
		batch = append(batch, r)
		if len(batch) < f.opts.MaxBatch {
			return nil
		}
		err := f.ingest(ctx, cur, batch)
		batch = batch[:0]
		return err
	})
	var ec *epochChange
	switch {
	case errors.As(err, &ec):
		return ec.epoch, nil
	case err != nil:
		return "", err
	}
	if err := check(h.Epoch, nil); err != nil {
		return h.Epoch, nil
	}
	klog.FromContext(ctx).V(2).Info("Listed records", "epoch", h.Epoch, "items", h.Items, "last", h.Seq)
	return "", f.ingest(ctx, cur, batch)
}

// storeError marks errors of the store, already counted.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

func isStoreError(err error) bool {
	var se *storeError
	return errors.As(err, &se)
}

// gone handles a 410 Gone: a new epoch starts over; in the same epoch the
// records between the cursor and the oldest buffered one are lost.
func (f *Follower) gone(ctx context.Context, cur *v1alpha1.Cursor, g *stream.Gone) error {
	logger := klog.FromContext(ctx)
	f.metrics.Relists.Inc()
	f.update(func(s *v1alpha1.FollowerStatus) { s.Relists++ })
	if cur.Epoch != "" && g.Epoch != cur.Epoch {
		return f.epochChanged(ctx, cur, g.Epoch)
	}
	if g.Oldest <= cur.Seq+1 {
		return fmt.Errorf("410 Gone with oldest sequence %d, yet the follower is at %d in epoch %q", g.Oldest, cur.Seq, g.Epoch)
	}
	gap := g.Oldest - cur.Seq - 1
	if cur.Epoch == "" {
		// First contact: the dropped records predate the follower.
		logger.V(2).Info("Starting at the oldest buffered record", "epoch", g.Epoch, "oldest", g.Oldest)
	} else {
		logger.Info("Records lost: the scheduler dropped them before they were read", "epoch", cur.Epoch, "after", cur.Seq, "lost", gap)
		cur.Lost += gap
		f.metrics.RecordsLost.Add(float64(gap))
		f.update(func(s *v1alpha1.FollowerStatus) { s.LastGap, s.LastGapAt = gap, time.Now() })
	}
	cur.Epoch, cur.Seq = g.Epoch, g.Oldest-1
	return f.persist(ctx, cur, nil)
}

func (f *Follower) epochChanged(ctx context.Context, cur *v1alpha1.Cursor, epoch string) error {
	klog.FromContext(ctx).Info("The record stream's epoch changed; starting over", "from", cur.Epoch, "to", epoch, "seq", cur.Seq)
	f.metrics.EpochChanges.Inc()
	f.update(func(s *v1alpha1.FollowerStatus) { s.EpochChanges++ })
	*cur = v1alpha1.Cursor{Epoch: epoch, Lost: cur.Lost}
	return f.persist(ctx, cur, nil)
}

func (f *Follower) persist(ctx context.Context, cur *v1alpha1.Cursor, items []stream.Record) error {
	if err := f.store.Append(ctx, *cur, items); err != nil {
		f.metrics.IngestErrors.WithLabelValues(metrics.StageStore).Inc()
		return &storeError{fmt.Errorf("storing records up to %d of epoch %q: %w", cur.Seq, cur.Epoch, err)}
	}
	f.metrics.RecordsReceived.Add(float64(len(items)))
	c := *cur
	f.update(func(s *v1alpha1.FollowerStatus) { s.Cursor = c })
	return nil
}

func (f *Follower) touch() {
	f.update(func(s *v1alpha1.FollowerStatus) { s.LastEventAt = time.Now() })
}

// ingest stores items that follow the cursor, in batches.
func (f *Follower) ingest(ctx context.Context, cur *v1alpha1.Cursor, items []stream.Record) error {
	batch := make([]stream.Record, 0, min(len(items), f.opts.MaxBatch))
	next := *cur
	for _, r := range items {
		if r.Seq <= next.Seq {
			continue // already have it
		}
		if gap := r.Seq - next.Seq - 1; gap > 0 {
			klog.FromContext(ctx).Info("Records lost: the stream skipped sequences", "epoch", next.Epoch, "after", next.Seq, "lost", gap)
			next.Lost += gap
			f.metrics.RecordsLost.Add(float64(gap))
			f.update(func(s *v1alpha1.FollowerStatus) { s.LastGap, s.LastGapAt = gap, time.Now() })
		}
		next.Seq = r.Seq
		batch = append(batch, r)
		if len(batch) == f.opts.MaxBatch {
			if err := f.persist(ctx, &next, batch); err != nil {
				return err
			}
			*cur = next
			batch = batch[:0]
		}
	}
	if len(batch) > 0 || next != *cur {
		if err := f.persist(ctx, &next, batch); err != nil {
			return err
		}
		*cur = next
	}
	return nil
}

// decoded is one line of a watch. malformed marks an error in the line's
// content, as opposed to one reading the stream.
type decoded struct {
	ev        stream.DecodedEvent
	err       error
	malformed bool
}

// watch stores the records a watch sends until it ends; errGone when it was
// answered 410 Gone, nil when the server ended it.
func (f *Follower) watch(ctx context.Context, cur *v1alpha1.Cursor) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, gone, err := f.open(ctx, cur, true)
	if gone != nil {
		if err := f.gone(ctx, cur, &gone.Gone); err != nil {
			return err
		}
		return errGone
	}
	if err != nil {
		return err
	}
	defer body.Close()
	f.update(func(s *v1alpha1.FollowerStatus) { s.Watching = true })
	defer f.update(func(s *v1alpha1.FollowerStatus) { s.Watching = false })
	f.touch()

	events := decodeAhead(ctx, body, f.opts.MaxBatch)
	idle := time.NewTimer(f.opts.IdleTimeout)
	defer idle.Stop()
	batch := make([]stream.Record, 0, f.opts.MaxBatch)
	for {
		var first decoded
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle.C:
			return fmt.Errorf("watch sent nothing for %v", f.opts.IdleTimeout)
		case fut, ok := <-events:
			first = await(fut, ok)
		}
		var end decoded
		batch, end = collect(first, events, batch[:0])
		idle.Reset(f.opts.IdleTimeout)
		f.touch()
		if err := f.ingest(ctx, cur, batch); err != nil {
			return err
		}
		if end.err != nil {
			return f.watchEnded(end)
		}
	}
}

// decodeAhead reads the lines of a watch and decodes them on every CPU
// while the reader moves on (decoding a large record takes milliseconds);
// the results come back in order, up to ahead of them waiting. The channel
// closes after the first error, which is io.EOF at the stream's clean end.
func decodeAhead(ctx context.Context, body io.Reader, ahead int) <-chan chan decoded {
	futures := make(chan chan decoded, ahead)
	go func() {
		defer close(futures)
		dec := stream.NewEventDecoder(body)
		workers := make(chan struct{}, runtime.GOMAXPROCS(0))
		for {
			line, n, err := dec.ReadLine()
			fut := make(chan decoded, 1)
			if err != nil {
				fut <- decoded{err: err}
			} else {
				select {
				case workers <- struct{}{}:
				case <-ctx.Done():
					return
				}
				go func() {
					ev, err := stream.DecodeEvent(line, n)
					<-workers
					fut <- decoded{ev: ev, err: err, malformed: err != nil}
				}()
			}
			select {
			case futures <- fut:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return futures
}

// await returns the decoded line of a future taken from decodeAhead's
// channel; ok false (the channel closed) reads as the end of the stream.
func await(fut chan decoded, ok bool) decoded {
	if !ok {
		return decoded{err: io.EOF}
	}
	return <-fut
}

// collect appends to batch the record of first and of the lines already
// waiting, up to the batch's capacity, and returns the line that ended the
// watch, if one did.
func collect(first decoded, events <-chan chan decoded, batch []stream.Record) ([]stream.Record, decoded) {
	for d := first; ; {
		if d.err != nil {
			return batch, d
		}
		if d.ev.Type == stream.EventAdded {
			batch = append(batch, d.ev.Record)
		}
		if len(batch) == cap(batch) {
			return batch, decoded{}
		}
		select {
		case fut, ok := <-events:
			d = await(fut, ok)
		default:
			return batch, decoded{}
		}
	}
}

// watchEnded counts how a watch ended: nil at the stream's clean end.
func (f *Follower) watchEnded(end decoded) error {
	if errors.Is(end.err, io.EOF) {
		return nil
	}
	if end.malformed || !errors.Is(end.err, io.ErrUnexpectedEOF) && !isNetError(end.err) {
		f.metrics.IngestErrors.WithLabelValues(metrics.StageDecode).Inc()
	} else {
		f.metrics.IngestErrors.WithLabelValues(metrics.StageConnect).Inc()
	}
	return end.err
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

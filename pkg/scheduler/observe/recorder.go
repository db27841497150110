package observe

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/nodeset"
)

// Sink receives every finished record, in the order records are finished.
type Sink interface {
	// Add takes a record and its trace ID ("" when not traced); a record it
	// refuses is counted as dropped. The record's slices are reused once
	// Add returns: a Sink copies what it keeps.
	Add(rec *record.Attempt, traceID string) error
}

// Options configure a Recorder.
type Options struct {
	// Sink receives the records, e.g. a *stream.Buffer.
	Sink Sink
	// QueueSize bounds the attempts waiting to be turned into records; when
	// it is full, further attempts are dropped and counted, so the scheduler
	// never waits for recording.
	QueueSize int
	// VictimGrace is how long an attempt that preempted waits for the
	// scheduler's asynchronous eviction to report its victims.
	VictimGrace time.Duration
	// Tracer, if set, traces every record before it reaches Sink; the trace
	// ID it returns goes to Sink with the record.
	Tracer Tracer
	// OnRecord, if set, is called with every record before it reaches Sink;
	// like the Sink and the Tracer, it must not keep the record.
	OnRecord func(*record.Attempt)
	// Shadows are the shadow profiles: Install takes them out of the
	// scheduler's profiles and runs each beside the attempts of its live
	// profile, and the live attempt's record holds what it would have done.
	Shadows []Shadow
	// ShadowSampleEvery runs the shadows in every n-th attempt of their live
	// profile, the first included; 0 and 1 mean every attempt.
	ShadowSampleEvery int
}

// Tracer turns a finished attempt into a trace.
type Tracer interface {
	// Trace exports the spans of rec, an attempt of pod, and returns the
	// trace ID, or "" when the attempt is not sampled. It must not block,
	// nor keep rec.
	Trace(pod *v1.Pod, rec *record.Attempt) string
}

// Recorder turns the scheduler's attempts into decision records.
type Recorder struct {
	opts Options

	mu       sync.Mutex
	profiles map[string]*profileTable

	// inflight maps a pod UID to its attempt between the start of the
	// scheduling cycle and the end of the binding cycle.
	inflight sync.Map
	// awaiting maps a pod UID to its finished attempt that preempted, for
	// VictimGrace, while the scheduler reports the victims it evicts. Later
	// attempts of the pod that finish meanwhile wait behind it, so that the
	// pod's records stay in order.
	awaitMu  sync.Mutex
	awaiting map[types.UID]*awaitingAttempt
	finished chan *attempt
	dropped  atomic.Uint64

	nodes atomic.Pointer[nodeset.Set]
}

// NewRecorder returns a Recorder; call Run to start producing records.
func NewRecorder(opts Options) *Recorder {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4096
	}
	if opts.VictimGrace <= 0 {
		opts.VictimGrace = 500 * time.Millisecond
	}
	return &Recorder{
		opts:     opts,
		profiles: map[string]*profileTable{},
		finished: make(chan *attempt, opts.QueueSize),
		awaiting: map[types.UID]*awaitingAttempt{},
	}
}

// Dropped returns the number of attempts dropped because the record queue was full.
func (r *Recorder) Dropped() uint64 { return r.dropped.Load() }

// QueueLength returns the number of attempts waiting to become records.
func (r *Recorder) QueueLength() int { return len(r.finished) }

// Run turns finished attempts into records until ctx is done, and then
// closes the shadow profiles' frameworks, as the scheduler closes its
// profiles' when its context is done.
func (r *Recorder) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			r.closeShadows()
			return
		case a := <-r.finished:
			r.publish(a)
		}
	}
}

// publish builds a's record and hands it on. A failure to build a record is
// counted as a drop; it never takes the scheduler down.
func (r *Recorder) publish(a *attempt) {
	defer func() {
		if p := recover(); p != nil {
			r.dropped.Add(1)
			klog.ErrorS(nil, "Dropped a decision record that could not be built", "pod", klog.KObj(a.pod), "panic", p)
		}
	}()
	defer a.release()
	rec := a.build()
	var traceID string
	if r.opts.Tracer != nil {
		traceID = r.opts.Tracer.Trace(a.pod, rec)
	}
	if r.opts.OnRecord != nil {
		r.opts.OnRecord(rec)
	}
	if err := r.opts.Sink.Add(rec, traceID); err != nil {
		r.dropped.Add(1)
		klog.ErrorS(err, "Dropped a decision record", "pod", klog.KObj(a.pod))
	}
}

// nodeSetOf returns the node set of the snapshot's list, the cached one
// while the snapshot keeps its list.
func (r *Recorder) nodeSetOf(list []fwk.NodeInfo) *nodeset.Set {
	if len(list) == 0 {
		return nodeset.Empty
	}
	if c := r.nodes.Load(); c != nil && c.BuiltFrom(list) {
		return c
	}
	set := nodeset.New(list)
	r.nodes.Store(set)
	return set
}

// awaitingAttempt is a preempting attempt waiting for its victims.
type awaitingAttempt struct {
	attempt *attempt
	later   []*attempt
}

// finish hands a finished attempt to Run without ever blocking.
func (r *Recorder) finish(a *attempt) {
	uid := a.pod.UID
	r.inflight.CompareAndDelete(uid, a)
	r.awaitMu.Lock()
	if w, ok := r.awaiting[uid]; ok {
		w.later = append(w.later, a)
		r.awaitMu.Unlock()
		return
	}
	if a.nominatedNode != "" {
		r.awaiting[uid] = &awaitingAttempt{attempt: a}
		r.awaitMu.Unlock()
		time.AfterFunc(r.opts.VictimGrace, func() { r.flushAwaiting(uid) })
		return
	}
	r.awaitMu.Unlock()
	r.enqueue(a)
}

// flushAwaiting enqueues a preempting attempt and the attempts behind it.
func (r *Recorder) flushAwaiting(uid types.UID) {
	r.awaitMu.Lock()
	w := r.awaiting[uid]
	delete(r.awaiting, uid)
	r.awaitMu.Unlock()
	if w == nil {
		return
	}
	r.enqueue(w.attempt)
	for _, a := range w.later {
		r.enqueue(a)
	}
}

func (r *Recorder) enqueue(a *attempt) {
	select {
	case r.finished <- a:
	default:
		r.dropped.Add(1)
		a.release()
	}
}

func (r *Recorder) noteVictim(preemptor types.UID, victim *v1.Pod) {
	r.awaitMu.Lock()
	w, ok := r.awaiting[preemptor]
	r.awaitMu.Unlock()
	if ok {
		w.attempt.addVictim(victim)
		return
	}
	// Synchronous preemption reports victims before the attempt finishes.
	if a := r.inflightAttempt(preemptor); a != nil {
		a.addVictim(victim)
		return
	}
	klog.V(4).InfoS("Preemption victim reported after its preemptor's record was finished", "preemptor", preemptor, "victim", klog.KObj(victim))
}

// inflightAttempt returns the attempt in flight for a pod.
func (r *Recorder) inflightAttempt(uid types.UID) *attempt {
	if v, ok := r.inflight.Load(uid); ok {
		return v.(*attempt)
	}
	return nil
}

// profileTable numbers the plugins of one profile and knows its score
// plugins and their weights.
type profileTable struct {
	name string

	mu      sync.Mutex
	plugins []string // original plugin names, by index

	// Set once by complete and observePlugins, read-only after.
	scorePlugins []record.ScorePlugin
	explainers   []attemptExplainer

	// current is the attempt whose scheduling algorithm (PreFilter to
	// Score) is running. The scheduler runs one scheduling cycle at a time,
	// so the per-node calls of Filter and Score find their attempt here.
	current atomic.Pointer[attempt]

	// shadows are the profile's shadows, set by Install; shadowCount counts
	// the attempts that sampleShadows was asked about.
	shadows     []*shadow
	shadowCount atomic.Uint64
}

// clockBase anchors monotonicNow.
var clockBase = time.Now()

// monotonicNow reads only the monotonic clock, which costs about half of
// time.Now; the per-node calls of Filter and Score use it.
func monotonicNow() time.Duration { return time.Since(clockBase) }

func (r *Recorder) profileTable(name string) *profileTable {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.profiles[name]
	if !ok {
		t = &profileTable{name: name}
		r.profiles[name] = t
	}
	return t
}

func (t *profileTable) add(plugin string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.plugins = append(t.plugins, plugin)
	return len(t.plugins) - 1
}

func (t *profileTable) numPlugins() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.plugins)
}

// complete records the score plugins the framework enabled, with weights.
func (t *profileTable) complete(enabled *config.Plugins) {
	for _, p := range enabled.Score.Enabled {
		t.scorePlugins = append(t.scorePlugins, record.ScorePlugin{Name: p.Name, Weight: int64(p.Weight)})
	}
}

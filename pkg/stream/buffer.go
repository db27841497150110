package stream

import (
	"fmt"
	"sync"

	"github.com/schedscope/schedscope/pkg/record"
)

// DefaultBufferSize is the default number of records a Buffer keeps: a
// follower that reconnects within seconds finds its place again. At 5000
// nodes a record encodes to about 27 kB (record's BenchmarkEncode), more
// for a pod rejected on every node, whose record names each node.
const DefaultBufferSize = 2000

// Buffer is a bounded ring of the newest records. Add never blocks on
// readers: when the ring is full the oldest record is overwritten and
// counted as evicted.
//
// Records are kept as their JSON encoding, made once in Add however many
// readers there are. A byte slice holds no pointers, so a full buffer of
// large records costs the garbage collector nothing to scan.
type Buffer struct {
	epoch string

	// addMu serializes Add, which encodes outside mu so that readers never
	// wait for an encoding.
	addMu sync.Mutex

	mu      sync.Mutex
	ring    []Encoded
	last    uint64        // sequence of the newest record; 0 when empty
	evicted uint64        // records overwritten before anyone could be sure to read them
	changed chan struct{} // closed and replaced on every Add
}

// Encoded is a buffered record: its sequence and its JSON encoding.
type Encoded struct {
	Seq  uint64
	JSON []byte
}

// NewBuffer returns a buffer holding at most size records.
func NewBuffer(size int, epoch string) *Buffer {
	if size < 1 {
		size = 1
	}
	return &Buffer{epoch: epoch, ring: make([]Encoded, size), changed: make(chan struct{})}
}

// Epoch identifies this buffer's sequence space.
func (b *Buffer) Epoch() string { return b.epoch }

// Add assigns the next sequence to a and appends its encoding. A record
// that cannot be encoded is not added, and takes no sequence.
func (b *Buffer) Add(a *record.Attempt) error {
	b.addMu.Lock()
	defer b.addMu.Unlock()
	b.mu.Lock()
	seq := b.last + 1
	b.mu.Unlock()
	a.Seq = seq
	data, err := record.Encode(a)
	if err != nil {
		a.Seq = 0
		return fmt.Errorf("encoding the record of attempt %d of pod %s/%s: %w", a.Attempt, a.Pod.Namespace, a.Pod.Name, err)
	}
	b.mu.Lock()
	b.last = seq
	i := int(seq % uint64(len(b.ring)))
	if b.ring[i].JSON != nil {
		b.evicted++
	}
	b.ring[i] = Encoded{Seq: seq, JSON: data}
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	return nil
}

// Stats returns the number of buffered records, the newest sequence and the
// number of records evicted so far.
func (b *Buffer) Stats() (buffered int, last, evicted uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lenLocked(), b.last, b.evicted
}

func (b *Buffer) lenLocked() int {
	if b.last < uint64(len(b.ring)) {
		return int(b.last)
	}
	return len(b.ring)
}

// oldestLocked is the sequence of the oldest buffered record (last+1 if empty).
func (b *Buffer) oldestLocked() uint64 {
	return b.last - uint64(b.lenLocked()) + 1
}

// closed is a channel that is always closed.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// After returns the records with sequence > since, oldest first, as many
// as fit in maxBytes of JSON (at least one), so that what an answer holds
// while it is written stays bounded however slow its reader. It also
// returns a channel closed once records after the returned ones exist
// (already closed when maxBytes left some out), the oldest buffered
// sequence, and ok=false when records after since were already evicted.
// The encodings are shared: callers must not modify them.
func (b *Buffer) After(since uint64, maxBytes int) (items []Encoded, changed <-chan struct{}, oldest uint64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	oldest = b.oldestLocked()
	if since+1 < oldest {
		return nil, b.changed, oldest, false
	}
	size := 0
	for seq := since + 1; seq <= b.last; seq++ {
		it := b.ring[int(seq%uint64(len(b.ring)))]
		if len(items) > 0 && size+len(it.JSON) > maxBytes {
			return items, closed, oldest, true
		}
		items = append(items, it)
		size += len(it.JSON)
	}
	return items, b.changed, oldest, true
}

// Oldest returns the sequence of the oldest buffered record, or Last()+1 when
// the buffer is empty.
func (b *Buffer) Oldest() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.oldestLocked()
}

// Last returns the newest sequence.
func (b *Buffer) Last() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

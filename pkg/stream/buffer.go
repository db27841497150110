package stream

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/schedscope/schedscope/pkg/record"
)

// DefaultBufferSize is the default number of records a Buffer keeps: a
// follower that reconnects within seconds finds its place again.
const DefaultBufferSize = 2000

// DefaultBufferBytes is the default bound on the JSON a Buffer keeps. A
// record names every node it was filtered on: at 5000 nodes it encodes to
// about 27 kB (record's BenchmarkEncode), so 32 MiB holds about 1200 of
// them, and DefaultBufferSize records up to about 1000 nodes.
const DefaultBufferBytes = 32 << 20

// Buffer is a bounded ring of the newest records, bounded both in count
// and in bytes. Add never blocks on readers: when either bound is
// reached the oldest records are dropped and counted as evicted; the
// newest record is always kept.
//
// Records are kept as their JSON encoding, made once in Add however many
// readers there are. A byte slice holds no pointers, so a full buffer of
// large records costs the garbage collector nothing to scan.
type Buffer struct {
	epoch string

	// addMu serializes Add, which encodes outside mu so that readers never
	// wait for an encoding.
	addMu sync.Mutex
	// encoding is Add's scratch space, reused under addMu. An encoding
	// grows its slice to up to twice its length; the buffer keeps an
	// exact-size copy, so that the bytes it counts are the bytes it holds.
	encoding []byte

	mu       sync.Mutex
	ring     []Encoded
	maxBytes int
	bytes    int           // JSON bytes buffered
	first    uint64        // sequence of the oldest buffered record; last+1 when empty
	last     uint64        // sequence of the newest record; 0 when empty
	evicted  uint64        // records dropped before anyone could be sure to read them
	changed  chan struct{} // closed and replaced on every Add
}

// Encoded is a buffered record: its sequence and its JSON encoding.
type Encoded struct {
	Seq  uint64
	JSON []byte
}

// NewBuffer returns a buffer holding at most size records and maxBytes of
// their JSON.
func NewBuffer(size, maxBytes int, epoch string) *Buffer {
	if size < 1 {
		size = 1
	}
	return &Buffer{epoch: epoch, ring: make([]Encoded, size), maxBytes: maxBytes, first: 1, changed: make(chan struct{})}
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
	var err error
	if b.encoding, err = record.AppendEncode(b.encoding[:0], a); err != nil {
		a.Seq = 0
		return fmt.Errorf("encoding the record of attempt %d of pod %s/%s: %w", a.Attempt, a.Pod.Namespace, a.Pod.Name, err)
	}
	data := bytes.Clone(b.encoding)
	b.mu.Lock()
	b.last = seq
	if b.lenLocked() > len(b.ring) {
		b.evictOldestLocked()
	}
	b.ring[int(seq%uint64(len(b.ring)))] = Encoded{Seq: seq, JSON: data}
	b.bytes += len(data)
	for b.bytes > b.maxBytes && b.first < seq {
		b.evictOldestLocked()
	}
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	return nil
}

func (b *Buffer) evictOldestLocked() {
	i := int(b.first % uint64(len(b.ring)))
	b.bytes -= len(b.ring[i].JSON)
	b.ring[i] = Encoded{}
	b.first++
	b.evicted++
}

// BufferStats describes a Buffer's contents.
type BufferStats struct {
	// Records and Bytes are the buffered records and their JSON bytes.
	Records int
	Bytes   int
	// Last is the newest sequence; Evicted counts the records dropped so far.
	Last    uint64
	Evicted uint64
}

// Stats returns what the buffer holds and has dropped.
func (b *Buffer) Stats() BufferStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BufferStats{Records: b.lenLocked(), Bytes: b.bytes, Last: b.last, Evicted: b.evicted}
}

func (b *Buffer) lenLocked() int { return int(b.last + 1 - b.first) }

// oldestLocked is the sequence of the oldest buffered record (last+1 if empty).
func (b *Buffer) oldestLocked() uint64 { return b.first }

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

package stream

import (
	"sync"

	"github.com/schedscope/schedscope/pkg/record"
)

// DefaultBufferSize is the default number of records a Buffer keeps: a
// follower that reconnects within seconds finds its place again, and at
// 5000 nodes, where a record holds the scores of hundreds of nodes (about
// 100 KB), the buffer stays near 200 MB.
const DefaultBufferSize = 2000

// Buffer is a bounded ring of the newest records. Add never blocks: when the
// ring is full the oldest record is overwritten and counted as evicted.
type Buffer struct {
	epoch string

	mu      sync.Mutex
	ring    []*record.Attempt
	last    uint64        // sequence of the newest record; 0 when empty
	evicted uint64        // records overwritten before anyone could be sure to read them
	changed chan struct{} // closed and replaced on every Add
}

// NewBuffer returns a buffer holding at most size records.
func NewBuffer(size int, epoch string) *Buffer {
	if size < 1 {
		size = 1
	}
	return &Buffer{epoch: epoch, ring: make([]*record.Attempt, size), changed: make(chan struct{})}
}

// Epoch identifies this buffer's sequence space.
func (b *Buffer) Epoch() string { return b.epoch }

// Add assigns the next sequence to a and appends it.
func (b *Buffer) Add(a *record.Attempt) {
	b.mu.Lock()
	b.last++
	a.Seq = b.last
	i := int(b.last % uint64(len(b.ring)))
	if b.ring[i] != nil {
		b.evicted++
	}
	b.ring[i] = a
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
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

// After returns the records with sequence > since, oldest first, a channel
// closed on the next Add, the oldest buffered sequence, and ok=false when
// records after since were already evicted.
func (b *Buffer) After(since uint64) (items []*record.Attempt, changed <-chan struct{}, oldest uint64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	oldest = b.oldestLocked()
	if since+1 < oldest {
		return nil, b.changed, oldest, false
	}
	for seq := since + 1; seq <= b.last; seq++ {
		items = append(items, b.ring[int(seq%uint64(len(b.ring)))])
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

package stream

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/klauspost/compress/s2"

	"github.com/schedscope/schedscope/pkg/record"
)

// DefaultBufferSize is the default number of records a Buffer keeps: a
// follower that reconnects within seconds finds its place again.
const DefaultBufferSize = 2000

// DefaultBufferBytes is the default bound on the memory a Buffer keeps
// records in, compressed. A record names every node it scored: at 5000
// nodes it encodes to about 30 kB of JSON and 6 kB compressed (stream's
// BenchmarkBufferAdd), so DefaultBufferSize records take 12.5 MB at 5000
// nodes and 22.5 MB at 20000, and 32 MiB bounds records larger than those.
const DefaultBufferBytes = 32 << 20

// Buffer is a bounded ring of the newest records, bounded both in count
// and in bytes. Add never blocks on readers: when either bound is
// reached the oldest records are dropped and counted as evicted; the
// newest record is always kept.
//
// Records are kept as their JSON encoding, made once in Add however many
// readers there are, compressed in the S2 block format: a record is mostly
// repeated node and plugin names, which S2 shrinks about 5 times for a
// tenth of the encoding's time. A byte slice holds no pointers, so a
// full buffer costs the garbage collector nothing to scan.
type Buffer struct {
	epoch string

	// addMu serializes Add, which encodes outside mu so that readers never
	// wait for an encoding.
	addMu sync.Mutex
	// encoding and compressed are Add's scratch space, reused under
	// addMu. The buffer keeps an exact-size copy of each compressed
	// record, so that the bytes it counts are the bytes it holds.
	encoding, compressed []byte

	mu       sync.Mutex
	ring     []Encoded
	maxBytes int
	bytes    int           // compressed bytes buffered
	first    uint64        // sequence of the oldest buffered record; last+1 when empty
	last     uint64        // sequence of the newest record; 0 when empty
	evicted  uint64        // records dropped before anyone could be sure to read them
	changed  chan struct{} // closed and replaced on every Add
}

// Encoded is a buffered record: its sequence, its trace and its JSON,
// compressed.
type Encoded struct {
	Seq     uint64
	TraceID string
	// Size is the length of its JSON.
	Size       int
	compressed []byte
}

// AppendJSON appends the record's JSON to dst.
func (e Encoded) AppendJSON(dst []byte) ([]byte, error) {
	n := len(dst)
	dst = slices.Grow(dst, e.Size)
	json, err := s2.Decode(dst[n:n+e.Size], e.compressed)
	if err != nil || len(json) != e.Size {
		return dst[:n], fmt.Errorf("decompressing record %d: %d bytes of %d, %v", e.Seq, len(json), e.Size, err)
	}
	return dst[:n+e.Size], nil
}

// appendFields appends the fields of the record's Record, as a list item
// and an ADDED event carry them: its sequence, trace and JSON.
func (e Encoded) appendFields(dst []byte) ([]byte, error) {
	dst = append(dst, `"seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	if e.TraceID != "" {
		dst = append(dst, `,"traceID":`...)
		// Add admits valid UTF-8 only, which always quotes.
		dst, _ = jsontext.AppendQuote(dst, e.TraceID)
	}
	dst = append(dst, `,"object":`...)
	return e.AppendJSON(dst)
}

// NewBuffer returns a buffer holding at most size records and maxBytes of
// them compressed.
func NewBuffer(size, maxBytes int, epoch string) *Buffer {
	if size < 1 {
		size = 1
	}
	return &Buffer{epoch: epoch, ring: make([]Encoded, size), maxBytes: maxBytes, first: 1, changed: make(chan struct{})}
}

// Epoch identifies this buffer's sequence space.
func (b *Buffer) Epoch() string { return b.epoch }

// Add appends a's encoding, with traceID ("" when not traced), under the
// next sequence. A record that cannot be encoded is not added, and takes no
// sequence.
func (b *Buffer) Add(a *record.Attempt, traceID string) error {
	if !utf8.ValidString(traceID) {
		return fmt.Errorf("the record of attempt %d of pod %s/%s: trace ID %q is not UTF-8", a.Attempt, a.Pod.Namespace, a.Pod.Name, traceID)
	}
	b.addMu.Lock()
	defer b.addMu.Unlock()
	var err error
	if b.encoding, err = record.AppendEncode(b.encoding[:0], a); err != nil {
		return fmt.Errorf("encoding the record of attempt %d of pod %s/%s: %w", a.Attempt, a.Pod.Namespace, a.Pod.Name, err)
	}
	size := s2.MaxEncodedLen(len(b.encoding))
	if size < 0 {
		return fmt.Errorf("the record of attempt %d of pod %s/%s: %d bytes of JSON are too many to compress", a.Attempt, a.Pod.Namespace, a.Pod.Name, len(b.encoding))
	}
	if cap(b.compressed) < size {
		b.compressed = make([]byte, size)
	}
	data := bytes.Clone(s2.Encode(b.compressed[:size], b.encoding))
	b.mu.Lock()
	seq := b.last + 1
	b.last = seq
	if b.lenLocked() > len(b.ring) {
		b.evictOldestLocked()
	}
	b.ring[int(seq%uint64(len(b.ring)))] = Encoded{Seq: seq, TraceID: traceID, Size: len(b.encoding), compressed: data}
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
	b.bytes -= len(b.ring[i].compressed)
	b.ring[i] = Encoded{}
	b.first++
	b.evicted++
}

// BufferStats describes a Buffer's contents.
type BufferStats struct {
	// Records and Bytes are the buffered records and their compressed bytes.
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
		if len(items) > 0 && size+it.Size > maxBytes {
			return items, closed, oldest, true
		}
		items = append(items, it)
		size += it.Size
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

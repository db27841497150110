package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/schedscope/schedscope/pkg/record"
)

// WriteTimeout bounds each write of a list or of a watch's batch of
// events: a reader that stalls longer is disconnected, and the records its
// answer held are released.
const WriteTimeout = 30 * time.Second

// MaxAnswerBytes bounds the records one list answer or one batch of a
// watch holds while it is written (a single larger record is sent alone).
// Stalled readers therefore keep at most their number × MaxAnswerBytes of
// records that the buffer has evicted (the scheduler caps the readers).
// A list answer ends at this bound; its client continues from its last
// record, as it does after any list.
const MaxAnswerBytes = 4 << 20

// Server serves a Buffer at Path.
type Server struct {
	buf          *Buffer
	bookmark     time.Duration
	writeTimeout time.Duration
	answerBytes  int
	watchers     atomic.Int64
}

// NewServer returns a server for buf that sends a bookmark on idle watches
// every bookmark interval.
func NewServer(buf *Buffer, bookmark time.Duration) *Server {
	return &Server{buf: buf, bookmark: bookmark, writeTimeout: WriteTimeout, answerBytes: MaxAnswerBytes}
}

// Watchers returns the number of open watches.
func (s *Server) Watchers() int64 { return s.watchers.Load() }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed, use GET", r.Method))
		return
	}
	q := r.URL.Query()
	watch := false
	if v := q.Get(ParamWatch); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("parameter %q: %q is not a boolean", ParamWatch, v))
			return
		}
		watch = b
	}
	// Without since, a list returns everything buffered and a watch starts
	// after the newest record.
	var since uint64
	sinceGiven := q.Has(ParamSince)
	if v := q.Get(ParamSince); sinceGiven {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("parameter %q: %q is not a sequence number", ParamSince, v))
			return
		}
		since = n
	}
	if epoch := q.Get(ParamEpoch); epoch != "" && epoch != s.buf.Epoch() {
		s.writeGone(w, 0, fmt.Sprintf("epoch %q has ended; the current epoch is %q", epoch, s.buf.Epoch()))
		return
	}
	if last := s.buf.Last(); since > last {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("parameter %q: %d is ahead of the stream's last sequence %d", ParamSince, since, last))
		return
	}
	if !sinceGiven {
		since = s.buf.Last()
		if !watch {
			since = s.buf.Oldest() - 1
		}
	}
	if watch {
		s.serveWatch(w, r, since)
		return
	}
	items, _, oldest, ok := s.buf.After(since, s.answerBytes)
	if !ok {
		s.writeGone(w, oldest, fmt.Sprintf("records after %d were dropped; the oldest buffered is %d", since, oldest))
		return
	}
	s.setWriteDeadline(w)
	w.Header().Set("Content-Type", "application/json")
	_ = writeList(w, List{Version: record.FormatVersion, Epoch: s.buf.Epoch(), Seq: since + uint64(len(items)), Oldest: oldest, Newest: s.buf.Last()}, items)
}

// setWriteDeadline gives the answer's next writes the server's write
// timeout to complete. A ResponseWriter without deadlines (a test
// recorder) is written without.
func (s *Server) setWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.writeTimeout))
}

// writeList writes the fields of head and items, already encoded, as a List.
func writeList(w io.Writer, head List, items []Encoded) error {
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	// b ends with "items":null}; the items replace the null.
	b = bytes.TrimSuffix(b, []byte("null}"))
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(b)
	bw.WriteByte('[')
	item := []byte{'{'}
	for i, it := range items {
		if i > 0 {
			bw.WriteByte(',')
		}
		if item, err = it.appendFields(item[:1]); err != nil {
			return err
		}
		item = append(item, '}')
		bw.Write(item)
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// addedPrefix begins every ADDED event.
var addedPrefix = `{"type":"` + EventAdded + `","version":` + strconv.Itoa(record.FormatVersion) + `,`

// writeAdded writes the ADDED event of an encoded record as one line,
// decompressing the record into scratch, which it returns for reuse.
func writeAdded(w *bufio.Writer, it Encoded, scratch []byte) ([]byte, error) {
	scratch, err := it.appendFields(append(scratch[:0], addedPrefix...))
	if err != nil {
		return scratch, err
	}
	w.Write(scratch)
	_, err = w.WriteString("}\n")
	return scratch, err
}

func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, since uint64) {
	s.watchers.Add(1)
	defer s.watchers.Add(-1)
	flusher, _ := w.(http.Flusher)
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	ticker := time.NewTicker(s.bookmark)
	defer ticker.Stop()
	started := false
	var scratch []byte
	for {
		items, changed, oldest, ok := s.buf.After(since, s.answerBytes)
		if !ok {
			if !started {
				s.writeGone(w, oldest, fmt.Sprintf("records after %d were dropped; the oldest buffered is %d", since, oldest))
			}
			// Mid-stream the client learns of the gap by relisting:
			// ending the response is the only signal a watch has.
			return
		}
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		s.setWriteDeadline(w)
		for _, it := range items {
			var err error
			if scratch, err = writeAdded(bw, it, scratch); err != nil {
				return
			}
			since = it.Seq
		}
		if bw.Flush() != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-ticker.C:
			s.setWriteDeadline(w)
			if err := enc.Encode(Event{Type: EventBookmark, Seq: since}); err != nil {
				return
			}
		}
	}
}

func (s *Server) writeGone(w http.ResponseWriter, oldest uint64, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusGone)
	_ = json.NewEncoder(w).Encode(Gone{Reason: "Expired", Message: msg, Epoch: s.buf.Epoch(), Oldest: oldest})
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

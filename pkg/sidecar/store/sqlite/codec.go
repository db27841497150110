package sqlite

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/schedscope/schedscope/pkg/record"
)

// gzip.BestSpeed: records are mostly repeated node and plugin names, which
// compress well even at the fastest level, and ingest must keep up with the
// scheduler.
const compressionLevel = gzip.BestSpeed

var writers = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, compressionLevel)
	return w
}}

func compress(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(data) / 8)
	w := writers.Get().(*gzip.Writer)
	defer writers.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decompress(data []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func encodeAttempt(a *record.Attempt) ([]byte, error) {
	data, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encoding record %d: %w", a.Seq, err)
	}
	return compress(data)
}

func decodeAttempt(data []byte) (*record.Attempt, error) {
	raw, err := decompress(data)
	if err != nil {
		return nil, fmt.Errorf("decompressing record: %w", err)
	}
	a := &record.Attempt{}
	if err := json.Unmarshal(raw, a); err != nil {
		return nil, fmt.Errorf("decoding record: %w", err)
	}
	return a, nil
}

func encodeNodes(nodes []string) ([]byte, error) {
	return compress([]byte(strings.Join(nodes, "\n")))
}

func decodeNodes(data []byte) ([]string, error) {
	raw, err := decompress(data)
	if err != nil {
		return nil, fmt.Errorf("decompressing node names: %w", err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	return strings.Split(string(raw), "\n"), nil
}

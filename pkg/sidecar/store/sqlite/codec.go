package sqlite

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/schedscope/schedscope/pkg/record"
)

// Records are stored as zstd frames at its fastest level: records are
// mostly repeated node and plugin names, which compress well even so, and
// ingest must keep up with the scheduler. zstd's fastest level compresses
// several times faster than gzip's and smaller.
var (
	encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	decoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
)

func compress(data []byte) []byte {
	return encoder.EncodeAll(data, make([]byte, 0, len(data)/8))
}

func decompress(data []byte) ([]byte, error) {
	return decoder.DecodeAll(data, nil)
}

func encodeAttempt(a *record.Attempt) ([]byte, error) {
	data, err := record.Encode(a)
	if err != nil {
		return nil, fmt.Errorf("encoding record %d: %w", a.Seq, err)
	}
	return compress(data), nil
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

func encodeNodes(nodes []string) []byte {
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

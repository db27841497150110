package store

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
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

// Row is a record encoded as every store keeps it.
type Row struct {
	Attempt *record.Attempt
	// Summary is the attempt's summary as JSON.
	Summary []byte
	// Data is the record's JSON, zstd-compressed.
	Data []byte
	// Finished is the attempt's finish time in Unix nanoseconds.
	Finished int64
	// Rejected are the attempt's Filter rejections by plugin.
	Rejected []RejectionRow
	// Signature identifies an unschedulable outcome, for folding its
	// repeats; nil for other results.
	Signature []byte
}

// RejectionRow is one plugin's rejections in an attempt.
type RejectionRow struct {
	Plugin string
	Nodes  int
	// Names are the rejected nodes' names, zstd-compressed.
	Names []byte
}

// EncodeRows encodes records of cluster's stream epoch for storing,
// spread over the CPUs: encoding a large record costs milliseconds.
func EncodeRows(cluster, epoch string, records []Record) ([]Row, error) {
	rows := make([]Row, len(records))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, r := range records {
		g.Go(func() (err error) {
			rows[i], err = encodeRow(cluster, epoch, r)
			return err
		})
	}
	return rows, g.Wait()
}

func encodeRow(cluster, epoch string, r Record) (Row, error) {
	a := r.Attempt
	var data []byte
	if r.JSON != nil {
		data = compress(r.JSON)
	} else {
		raw, err := record.Encode(a)
		if err != nil {
			return Row{}, fmt.Errorf("encoding record %d: %w", a.Seq, err)
		}
		data = compress(raw)
	}
	sum := Summarize(a, cluster, epoch)
	sum.StoredBytes = len(data)
	summary, err := json.Marshal(sum)
	if err != nil {
		return Row{}, fmt.Errorf("encoding summary of record %d: %w", a.Seq, err)
	}
	sig, err := outcomeSignature(a)
	if err != nil {
		return Row{}, fmt.Errorf("signing the outcome of record %d: %w", a.Seq, err)
	}
	var rejected []RejectionRow
	for _, rj := range a.RejectionsByPlugin() {
		rejected = append(rejected, RejectionRow{Plugin: rj.Plugin, Nodes: len(rj.Nodes), Names: compress([]byte(strings.Join(rj.Nodes, "\n")))})
	}
	return Row{Attempt: a, Summary: summary, Data: data, Finished: sum.Finished.UnixNano(), Rejected: rejected, Signature: sig}, nil
}

// outcomeSignature identifies an unschedulable attempt's outcome: the
// result, message, failing point, nominated node, node counts and every
// plugin's rejections (nodes and reasons). Timings, numbers and traces are
// left out: two attempts with one signature differ in nothing else a
// reader asks about. It is nil for attempts that were not unschedulable.
func outcomeSignature(a *record.Attempt) ([]byte, error) {
	if a.Result != record.ResultUnschedulable {
		return nil, nil
	}
	b, err := json.Marshal(struct {
		Profile, Message, FailedPoint, NominatedNode string
		Nodes                                        record.NodeCounts
		Rejections                                   []record.PluginRejections
	}{a.Profile, a.Message, a.FailedPoint, a.NominatedNode, a.Nodes, a.RejectionsByPlugin()})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return sum[:], nil
}

// DecodeAttempt decodes a Row's Data.
func DecodeAttempt(data []byte) (*record.Attempt, error) {
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

// DecodeNodes decodes a RejectionRow's Names.
func DecodeNodes(data []byte) ([]string, error) {
	raw, err := decompress(data)
	if err != nil {
		return nil, fmt.Errorf("decompressing node names: %w", err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	return strings.Split(string(raw), "\n"), nil
}

// DecodeSummary decodes a Row's Summary, with the repeats folded into its
// attempt since: how many, the last one's number and finish time (Unix
// nanoseconds).
func DecodeSummary(summary []byte, repeats, lastAttempt int, lastFinished int64) (v1alpha1.AttemptSummary, error) {
	var sum v1alpha1.AttemptSummary
	if err := json.Unmarshal(summary, &sum); err != nil {
		return sum, fmt.Errorf("decoding attempt summary: %w", err)
	}
	if repeats > 0 {
		sum.Repeats, sum.LastAttempt, sum.LastFinished = repeats, lastAttempt, time.Unix(0, lastFinished).UTC()
	}
	return sum, nil
}

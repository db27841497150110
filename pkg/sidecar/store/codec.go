package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/stream"
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

// A stored record (Row.Data) is the record format version
// (record.FormatVersion) in a zstd skippable frame, then the record's JSON
// as a zstd frame:
//
//	50 2A 4D 18 | 04 00 00 00 | version (uint32) | zstd frame of the JSON
//
// all little-endian. zstd readers pass over a skippable frame, and a
// record stored before records had versions is the zstd frame alone:
// version 1.
const (
	versionMagic     = 0x184D2A50
	versionFrameSize = 12
)

// encodeData returns raw, the JSON of a record of the format version this
// build writes, as a Row's Data.
func encodeData(raw []byte) []byte {
	data := make([]byte, versionFrameSize, versionFrameSize+len(raw)/8)
	binary.LittleEndian.PutUint32(data, versionMagic)
	binary.LittleEndian.PutUint32(data[4:], 4)
	binary.LittleEndian.PutUint32(data[8:], record.FormatVersion)
	return encoder.EncodeAll(raw, data)
}

// dataVersion returns the format version of a Row's Data and its zstd frame.
func dataVersion(data []byte) (version int, frame []byte, err error) {
	if len(data) < 4 || binary.LittleEndian.Uint32(data) != versionMagic {
		return 1, data, nil
	}
	if len(data) < versionFrameSize || binary.LittleEndian.Uint32(data[4:]) != 4 {
		return 0, nil, fmt.Errorf("the stored record's version frame is not %d bytes", versionFrameSize)
	}
	return int(binary.LittleEndian.Uint32(data[8:])), data[versionFrameSize:], nil
}

// Row is a record encoded as every store keeps it.
type Row struct {
	// Seq is the record's sequence in its stream epoch.
	Seq     uint64
	Attempt *record.Attempt
	// Summary is the attempt's summary as JSON.
	Summary []byte
	// Data is the record's JSON, zstd-compressed, after its format
	// version (encodeData).
	Data []byte
	// Finished is the attempt's finish time in Unix nanoseconds.
	Finished int64
	// Rejected are the attempt's Filter rejections by plugin.
	Rejected []RejectionRow
	// Signature identifies an unschedulable outcome, for folding its
	// repeats; nil for other results.
	Signature []byte
	// Shadows are the attempt's shadow runs, one per shadow profile.
	Shadows []ShadowRow
}

// ShadowRow is one shadow profile's run in an attempt, as the shadow
// summary counts it.
type ShadowRow struct {
	Shadow            string
	Outcome           record.ShadowOutcome
	NotComparedReason string
	// Plugin is the plugin most behind the run's difference from the live
	// attempt (the first of record.Attempt.ShadowDifferences); empty when
	// none is.
	Plugin string
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
func EncodeRows(cluster, epoch string, records []stream.Record) ([]Row, error) {
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

func encodeRow(cluster, epoch string, r stream.Record) (Row, error) {
	a := r.Attempt
	var data []byte
	if r.JSON != nil {
		data = encodeData(r.JSON)
	} else {
		raw, err := record.Encode(a)
		if err != nil {
			return Row{}, fmt.Errorf("encoding record %d: %w", r.Seq, err)
		}
		data = encodeData(raw)
	}
	sum := Summarize(r, cluster, epoch)
	sum.StoredBytes = len(data)
	summary, err := json.Marshal(sum)
	if err != nil {
		return Row{}, fmt.Errorf("encoding summary of record %d: %w", r.Seq, err)
	}
	sig, err := outcomeSignature(a)
	if err != nil {
		return Row{}, fmt.Errorf("signing the outcome of record %d: %w", r.Seq, err)
	}
	var rejected []RejectionRow
	for _, rj := range a.RejectionsByPlugin() {
		rejected = append(rejected, RejectionRow{Plugin: rj.Plugin, Nodes: len(rj.Nodes), Names: compress([]byte(strings.Join(rj.Nodes, "\n")))})
	}
	return Row{Seq: r.Seq, Attempt: a, Summary: summary, Data: data, Finished: sum.Finished.UnixNano(), Rejected: rejected, Signature: sig,
		Shadows: shadowRows(a)}, nil
}

// shadowRows returns the rows of a's shadow runs.
func shadowRows(a *record.Attempt) []ShadowRow {
	var out []ShadowRow
	for i := range a.Shadows {
		run := &a.Shadows[i]
		row := ShadowRow{Shadow: run.Profile, Outcome: run.Outcome, NotComparedReason: run.NotComparedReason}
		if plugins := a.ShadowDifferences(run); len(plugins) > 0 {
			row.Plugin = plugins[0]
		}
		out = append(out, row)
	}
	return out
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

// DecodeAttempt decodes a Row's Data. A record of a format version this
// build does not read is an error that wraps a *record.FormatError.
func DecodeAttempt(data []byte) (*record.Attempt, error) {
	version, frame, err := dataVersion(data)
	if err != nil {
		return nil, err
	}
	if err := record.CheckFormat(version); err != nil {
		return nil, fmt.Errorf("stored record: %w", err)
	}
	raw, err := decompress(frame)
	if err != nil {
		return nil, fmt.Errorf("decompressing record: %w", err)
	}
	a := &record.Attempt{}
	if err := json.Unmarshal(raw, a); err != nil {
		return nil, fmt.Errorf("decoding record: %w", err)
	}
	return a, nil
}

// DecodeRecord decodes a stored record from its Row's Summary, which
// holds its sequence and trace, and Data.
func DecodeRecord(summary, data []byte) (*stream.Record, error) {
	var sum v1alpha1.AttemptSummary
	if err := json.Unmarshal(summary, &sum); err != nil {
		return nil, fmt.Errorf("decoding attempt summary: %w", err)
	}
	a, err := DecodeAttempt(data)
	if err != nil {
		return nil, err
	}
	return &stream.Record{Seq: sum.Seq, TraceID: sum.TraceID, Attempt: a}, nil
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

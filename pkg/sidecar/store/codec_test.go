package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/stream"
)

// TestDecodeRejectsCorruptRecords checks that stored bytes that are not a
// zstd frame are an error, not a record.
func TestDecodeRejectsCorruptRecords(t *testing.T) {
	if _, err := DecodeAttempt([]byte("not zstd")); err == nil {
		t.Error("decoding bytes that are not zstd succeeded")
	}
	if _, err := DecodeNodes([]byte("not zstd")); err == nil {
		t.Error("decoding node names that are not zstd succeeded")
	}
	if _, err := DecodeAttempt(encodeData([]byte("{}"))[:8]); err == nil {
		t.Error("decoding a cut version frame succeeded")
	}
}

// TestStoredRecordsCarryTheirFormatVersion: a row's data names the record
// format version this build writes and decodes back to the record; data
// without a version (stored before records had versions) is version 1,
// and a version this build does not read is an error naming it.
func TestStoredRecordsCarryTheirFormatVersion(t *testing.T) {
	a := recordtest.MakeAttempt("ns", "p", "uid").Rejected("TaintToleration", "taint", "n1").Obj()
	raw, err := record.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := EncodeRows("", "e1", []stream.Record{{Seq: 7, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Attempt: a, JSON: raw}})
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if v, _, err := dataVersion(r.Data); err != nil || v != record.FormatVersion {
		t.Errorf("stored version %d, %v; want %d", v, err, record.FormatVersion)
	}
	got, err := DecodeRecord(r.Summary, r.Data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&stream.Record{Seq: 7, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Attempt: a}, got); diff != "" {
		t.Errorf("decoded record (-want +got):\n%s", diff)
	}

	// Before versions, the record's JSON held its sequence and trace, and
	// was stored as a zstd frame alone.
	legacy, err := json.Marshal(struct {
		Seq     uint64 `json:"seq"`
		TraceID string `json:"traceID"`
		*record.Attempt
	}{7, "4bf92f3577b34da6a3ce929d0e0e4736", a})
	if err != nil {
		t.Fatal(err)
	}
	old, err := DecodeAttempt(compress(legacy))
	if err != nil {
		t.Fatalf("a record stored before versions: %v", err)
	}
	if diff := cmp.Diff(a, old); diff != "" {
		t.Errorf("a record stored before versions (-want +got):\n%s", diff)
	}

	future := append([]byte(nil), r.Data...)
	binary.LittleEndian.PutUint32(future[8:], 2)
	_, err = DecodeAttempt(future)
	var fe *record.FormatError
	if want := "stored record: record format version 2 is not one this build reads (it reads versions [1])"; !errors.As(err, &fe) || err.Error() != want {
		t.Errorf("a record of version 2: %v, want %q", err, want)
	}
}

package store

import "testing"

// TestDecodeRejectsCorruptRecords checks that stored bytes that are not a
// zstd frame are an error, not a record.
func TestDecodeRejectsCorruptRecords(t *testing.T) {
	if _, err := DecodeAttempt([]byte("not zstd")); err == nil {
		t.Error("decoding bytes that are not zstd succeeded")
	}
	if _, err := DecodeNodes([]byte("not zstd")); err == nil {
		t.Error("decoding node names that are not zstd succeeded")
	}
}

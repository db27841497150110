package stream

import (
	"testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
)

// TestBufferHoldsWhatItCounts: the buffer keeps each record's JSON in a
// slice of about its length (within the allocator's rounding), not in the
// slice the encoding grew, so that its byte bound bounds its memory.
func TestBufferHoldsWhatItCounts(t *testing.T) {
	b := NewBuffer(10, 1<<30, "epoch")
	attempts := []*record.Attempt{recordtest.Typical(1, 500), recordtest.Typical(2, 5000), recordtest.Large(3, 5000), recordtest.Typical(4, 5000)}
	for _, a := range attempts {
		if err := b.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	items, _, _, _ := b.After(0, 1<<30)
	if len(items) != len(attempts) {
		t.Fatalf("%d records buffered, want %d", len(items), len(attempts))
	}
	for i, it := range items {
		want, err := record.Encode(attempts[i])
		if err != nil {
			t.Fatal(err)
		}
		if string(it.JSON) != string(want) {
			t.Errorf("record %d: the buffered JSON is not Encode's", it.Seq)
		}
		if n, c := len(it.JSON), cap(it.JSON); c > n+n/8 {
			t.Errorf("record %d: %d bytes of JSON held in a slice of %d", it.Seq, n, c)
		}
	}
}

package stream

import (
	"fmt"
	"testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
)

// TestBufferHoldsWhatItCounts: the buffer gives back each record's JSON as
// Encode made it, and keeps it compressed in a slice of about the length
// it counts (within the allocator's rounding), not in the slice the
// compression wrote, so that its byte bound bounds its memory.
func TestBufferHoldsWhatItCounts(t *testing.T) {
	b := NewBuffer(10, 1<<30, "epoch")
	attempts := []*record.Attempt{recordtest.Typical(1, 500), recordtest.Typical(2, 5000), recordtest.Large(3, 5000), recordtest.Typical(4, 5000)}
	for _, a := range attempts {
		if err := b.Add(a, ""); err != nil {
			t.Fatal(err)
		}
	}
	items, _, _, _ := b.After(0, 1<<30)
	if len(items) != len(attempts) {
		t.Fatalf("%d records buffered, want %d", len(items), len(attempts))
	}
	held := 0
	for i, it := range items {
		want, err := record.Encode(attempts[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := it.AppendJSON([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "prefix"+string(want) || it.Size != len(want) {
			t.Errorf("record %d: the buffered JSON (%d bytes) is not Encode's (%d bytes)", it.Seq, it.Size, len(want))
		}
		if n, c := len(it.compressed), cap(it.compressed); c > n+n/4+8<<10 {
			t.Errorf("record %d: %d compressed bytes held in a slice of %d", it.Seq, n, c)
		}
		if len(it.compressed) >= len(want)/2 {
			t.Errorf("record %d: %d bytes of JSON compressed to %d", it.Seq, len(want), len(it.compressed))
		}
		held += len(it.compressed)
	}
	if got := b.Stats().Bytes; got != held {
		t.Errorf("Stats().Bytes = %d, want the %d compressed bytes held", got, held)
	}
}

// TestAppendJSONRefusesACorruptRecord: a record whose compressed bytes do
// not decompress to its size is an error naming it, and dst is kept.
func TestAppendJSONRefusesACorruptRecord(t *testing.T) {
	b := NewBuffer(1, 1<<20, "epoch")
	if err := b.Add(recordtest.Typical(1, 100), ""); err != nil {
		t.Fatal(err)
	}
	items, _, _, _ := b.After(0, 1<<20)
	it := items[0]
	it.Size++
	got, err := it.AppendJSON([]byte("kept"))
	if err == nil || string(got) != "kept" {
		t.Errorf("AppendJSON of a record one byte short = %q, %v; want an error and dst kept", got, err)
	}
}

// BenchmarkBufferAdd adds the records of kube-scheduler's default profile
// for a pod that fits (recordtest.Typical) at each cluster size, encoding
// and compressing each, and reports the JSON bytes and the compressed
// bytes the buffer keeps per record; decompress reads one back, as a
// reader of the stream does.
func BenchmarkBufferAdd(b *testing.B) {
	for _, nodes := range []int{100, 1000, 5000, 20000} {
		a := recordtest.Typical(1, nodes)
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			buf := NewBuffer(DefaultBufferSize, DefaultBufferBytes, "epoch")
			b.ReportAllocs()
			for b.Loop() {
				if err := buf.Add(a, ""); err != nil {
					b.Fatal(err)
				}
			}
			st := buf.Stats()
			items, _, _, _ := buf.After(st.Last-1, 1<<30)
			b.ReportMetric(float64(items[0].Size), "json-B/record")
			b.ReportMetric(float64(st.Bytes)/float64(st.Records), "kept-B/record")
		})
		b.Run(fmt.Sprintf("nodes=%d/decompress", nodes), func(b *testing.B) {
			buf := NewBuffer(1, DefaultBufferBytes, "epoch")
			if err := buf.Add(a, ""); err != nil {
				b.Fatal(err)
			}
			items, _, _, _ := buf.After(0, 1<<30)
			var json []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if json, err = items[0].AppendJSON(json[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
)

// FuzzDecodeStream feeds arbitrary bytes to the watch, list and 410 Gone
// decoders: they must never panic, and every event they accept must be one
// the follower can ingest safely.
func FuzzDecodeStream(f *testing.F) {
	a := recordtest.MakeAttempt("ns", "p", "uid").Rejected("TaintToleration", "taint", "n1").Obj()
	added, _ := json.Marshal(Event{Type: EventAdded, Version: record.FormatVersion, Seq: 1, TraceID: "t1", Object: a})
	bookmark, _ := json.Marshal(Event{Type: EventBookmark, Seq: 1})
	list, _ := json.Marshal(List{Version: record.FormatVersion, Epoch: "e1", Seq: 1, Oldest: 1, Items: []Record{{Seq: 1, TraceID: "t1", Attempt: a}}})
	gone, _ := json.Marshal(Gone{Reason: "Expired", Epoch: "e1", Oldest: 7})
	// The scheduler writes scores in columns (record.Encode).
	scored := recordtest.MakeAttempt("ns", "q", "uid2").Scheduled("n1").Scores([]string{"A", "B"}, map[string][]int64{"n1": {3, 4}, "n2": {1, 2}}).Obj()
	columns, _ := record.Encode(scored)
	addedColumns := []byte(`{"type":"ADDED","version":1,"seq":2,"object":` + string(columns) + "}")
	for _, seed := range [][]byte{
		append(append(added, '\n'), bookmark...),
		added[:len(added)/2],
		list, gone, addedColumns,
		[]byte(`{"type":"ADDED","version":2,"seq":2,"object":{}}`),
		[]byte(`{"type":"ADDED","seq":2,"object":{"seq":2}}`),
		[]byte(`{"type":"ADDED","version":1,"seq":0,"object":{}}`),
		[]byte(`{"type":"DELETED","seq":1}`),
		[]byte(`{"version":1,"epoch":"e","items":[null]}`),
		[]byte(`{"version":1,"epoch":"e","items":[{"seq":2,"object":{}},{"seq":1,"object":{}}]}`),
		[]byte(`{"items":[{"seq":1,"object":{}}],"epoch":"late","version":1}`),
		[]byte(`{"items":[{"seq":1,"object":{}}],"epoch":"e","version":9}`),
		[]byte(`{"version":1,"epoch":"e","items":null,"seq":0}`),
		[]byte("\x00\xff{"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewEventDecoder(bytes.NewReader(data))
		for range 1000 {
			ev, err := dec.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				break
			}
			if ev.Type == EventAdded && (ev.Record.Attempt == nil || ev.Record.Seq != ev.Seq || ev.Seq == 0 || len(ev.Record.JSON) == 0) {
				t.Fatalf("accepted an event the follower cannot ingest: %+v", ev)
			}
		}
		var last uint64
		var epochs []string
		h, err := DecodeList(bytes.NewReader(data), func(epoch string, r Record) error {
			if r.Attempt == nil || r.Seq <= last || len(r.JSON) == 0 {
				t.Fatalf("list item out of order or null: %+v after %d", r, last)
			}
			last = r.Seq
			epochs = append(epochs, epoch)
			return nil
		})
		if err == nil && h.Epoch == "" {
			t.Fatalf("accepted a list without epoch")
		}
		if (err == nil || len(epochs) > 0) && record.CheckFormat(h.Version) != nil {
			t.Fatalf("accepted a list, or items of it, of record format version %d", h.Version)
		}
		for _, e := range epochs {
			if e == "" || err == nil && e != h.Epoch {
				t.Fatalf("item given with epoch %q, list epoch %q", e, h.Epoch)
			}
		}
		if g, err := DecodeGone(bytes.NewReader(data)); err == nil && g.Epoch == "" {
			t.Fatalf("accepted a 410 body without epoch")
		}
	})
}

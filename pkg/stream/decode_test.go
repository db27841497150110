package stream

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/record"
)

func TestDecodeList(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		want      []string
		wantHead  ListHeader
		wantError string
	}{
		{
			name: "items after the version and epoch",
			body: `{"version":1,"epoch":"e1","seq":3,"oldest":2,"newest":7,"items":[{"seq":2,"object":{}},` +
				`{"seq":3,"traceID":"t3","object":{"scores":{"nodes":[]}}}]}`,
			want:     []string{`e1/2 "" {}`, `e1/3 "t3" {"scores":{"nodes":[]}}`},
			wantHead: ListHeader{Version: 1, Epoch: "e1", Seq: 3, Oldest: 2, Newest: 7, Items: 2},
		},
		{
			name:     "items before the epoch are held back",
			body:     `{"items":[{"seq":5,"object":{"profile":"p"}}],"version":1,"epoch":"e2","seq":5,"oldest":5,"extra":{"x":[1]}}`,
			want:     []string{`e2/5 "" {"profile":"p"}`},
			wantHead: ListHeader{Version: 1, Epoch: "e2", Seq: 5, Oldest: 5, Items: 1},
		},
		{name: "empty", body: `{"version":1,"epoch":"e1","seq":0,"oldest":1,"items":null}`, wantHead: ListHeader{Version: 1, Epoch: "e1", Oldest: 1}},
		{name: "no epoch", body: `{"version":1,"seq":0,"items":[]}`, wantError: "no epoch"},
		{name: "out of order", body: `{"version":1,"epoch":"e","items":[{"seq":2,"object":{}},{"seq":2,"object":{}}]}`, wantError: "out of order"},
		{name: "null item", body: `{"version":1,"epoch":"e","items":[null]}`, wantError: "null"},
		{name: "item without a record", body: `{"version":1,"epoch":"e","items":[{"seq":1}]}`, wantError: "null"},
		{name: "truncated", body: `{"version":1,"epoch":"e","items":[{"seq":2,"object":{}}`, wantError: "decoding list"},
		{name: "not an object", body: `[1]`, wantError: "decoding list"},
		{
			name:      "unknown version",
			body:      `{"version":2,"epoch":"e","items":[{"seq":1,"object":{}}]}`,
			wantError: "record format version 2 is not one this build reads (it reads versions [1])",
		},
		{
			name:      "unknown version after the items",
			body:      `{"epoch":"e","items":[{"seq":1,"object":{}}],"version":3}`,
			wantError: "record format version 3 is not one this build reads",
		},
		{
			name:      "no version: a record of before versions",
			body:      `{"epoch":"e","items":[{"seq":1,"object":{"seq":1}}]}`,
			wantError: "the record names no format version (this build reads versions [1])",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			h, err := DecodeList(strings.NewReader(tt.body), func(epoch string, r Record) error {
				got = append(got, fmt.Sprintf("%s/%d %q %s", epoch, r.Seq, r.TraceID, r.JSON))
				return nil
			})
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error %v, want %q", err, tt.wantError)
				}
				if strings.Contains(tt.wantError, "version") && len(got) > 0 {
					t.Errorf("the records %q were handed on from a list of a version this build does not read", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHead, h); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeEventValidatesScores checks that the scores, which the follower
// does not decode, must still be valid JSON.
func TestDecodeEventValidatesScores(t *testing.T) {
	for _, tt := range []struct {
		line      string
		wantError bool
	}{
		{line: `{"type":"ADDED","version":1,"seq":1,"traceID":"t1","object":{"scores":{"nodes":[{"node":"n1","total":3}]}}}`},
		{line: `{"type":"ADDED","version":1,"seq":1,"object":{"scores":{"nodes":[{"node":"n1",}]}}}`, wantError: true},
		{line: `{"type":"ADDED","version":1,"seq":1,"object":{"scores":{"nodes":[}}}`, wantError: true},
	} {
		ev, err := DecodeEvent([]byte(tt.line), 1)
		if gotError := err != nil; gotError != tt.wantError {
			t.Errorf("DecodeEvent(%s): error %v, want error %v", tt.line, err, tt.wantError)
			continue
		}
		if err == nil && (ev.Record.Seq != 1 || ev.Record.TraceID != "t1" || !strings.Contains(string(ev.Record.JSON), `"scores"`)) {
			t.Errorf("DecodeEvent(%s) = %+v, want record 1 of trace t1 with its scores kept as JSON", tt.line, ev)
		}
	}
}

// TestDecodeEventRefusesUnknownVersions: an ADDED event of a record format
// version this build does not read, or of none, is an error that names
// the version and the versions it reads; a bookmark carries no record and
// needs no version.
func TestDecodeEventRefusesUnknownVersions(t *testing.T) {
	for line, want := range map[string]string{
		`{"type":"ADDED","version":2,"seq":1,"object":{}}`:          "watch event 1: ADDED event 1: record format version 2 is not one this build reads (it reads versions [1])",
		`{"type":"ADDED","seq":1,"object":{"seq":1,"traceID":"t"}}`: "watch event 1: ADDED event 1: the record names no format version (this build reads versions [1])",
	} {
		_, err := DecodeEvent([]byte(line), 1)
		var fe *record.FormatError
		if !errors.As(err, &fe) || err.Error() != want {
			t.Errorf("DecodeEvent(%s) = %v, want %q", line, err, want)
		}
	}
	if ev, err := DecodeEvent([]byte(`{"type":"BOOKMARK","seq":4}`), 1); err != nil || ev.Seq != 4 {
		t.Errorf("a bookmark: %+v, %v; want seq 4", ev, err)
	}
}

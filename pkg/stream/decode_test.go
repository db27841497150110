package stream

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
			name:     "items after the epoch",
			body:     `{"epoch":"e1","seq":3,"oldest":2,"newest":7,"items":[{"seq":2},{"seq":3,"scores":{"nodes":[]}}]}`,
			want:     []string{`e1/2 {"seq":2}`, `e1/3 {"seq":3,"scores":{"nodes":[]}}`},
			wantHead: ListHeader{Epoch: "e1", Seq: 3, Oldest: 2, Newest: 7, Items: 2},
		},
		{
			name:     "items before the epoch are held back",
			body:     `{"items":[{"seq":5}],"epoch":"e2","seq":5,"oldest":5,"extra":{"x":[1]}}`,
			want:     []string{`e2/5 {"seq":5}`},
			wantHead: ListHeader{Epoch: "e2", Seq: 5, Oldest: 5, Items: 1},
		},
		{name: "empty", body: `{"epoch":"e1","seq":0,"oldest":1,"items":null}`, wantHead: ListHeader{Epoch: "e1", Oldest: 1}},
		{name: "no epoch", body: `{"seq":0,"items":[]}`, wantError: "no epoch"},
		{name: "out of order", body: `{"epoch":"e","items":[{"seq":2},{"seq":2}]}`, wantError: "out of order"},
		{name: "null item", body: `{"epoch":"e","items":[null]}`, wantError: "null"},
		{name: "truncated", body: `{"epoch":"e","items":[{"seq":2}`, wantError: "decoding list"},
		{name: "not an object", body: `[1]`, wantError: "decoding list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			h, err := DecodeList(strings.NewReader(tt.body), func(epoch string, r Record) error {
				got = append(got, fmt.Sprintf("%s/%d %s", epoch, r.Attempt.Seq, r.JSON))
				return nil
			})
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error %v, want %q", err, tt.wantError)
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
		{line: `{"type":"ADDED","seq":1,"object":{"seq":1,"scores":{"nodes":[{"node":"n1","total":3}]}}}`},
		{line: `{"type":"ADDED","seq":1,"object":{"seq":1,"scores":{"nodes":[{"node":"n1",}]}}}`, wantError: true},
		{line: `{"type":"ADDED","seq":1,"object":{"seq":1,"scores":{"nodes":[}}}`, wantError: true},
	} {
		ev, err := DecodeEvent([]byte(tt.line), 1)
		if gotError := err != nil; gotError != tt.wantError {
			t.Errorf("DecodeEvent(%s): error %v, want error %v", tt.line, err, tt.wantError)
			continue
		}
		if err == nil && (ev.Record.Attempt.Seq != 1 || !strings.Contains(string(ev.Record.JSON), `"scores"`)) {
			t.Errorf("DecodeEvent(%s) = %+v, want record 1 with its scores kept as JSON", tt.line, ev)
		}
	}
}

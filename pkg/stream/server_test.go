package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
)

// add adds a record of each pod named, traced as "trace-" and its name.
func add(t *testing.T, b *Buffer, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := b.Add(&record.Attempt{Pod: record.PodRef{Name: n}}, "trace-"+n); err != nil {
			t.Fatal(err)
		}
	}
}

func podNames(items []Record) []string {
	var out []string
	for _, r := range items {
		out = append(out, r.Attempt.Pod.Name)
	}
	return out
}

// decoded decodes buffered records.
func decoded(t *testing.T, items []Encoded) []Record {
	t.Helper()
	var out []Record
	for _, it := range items {
		a := &record.Attempt{}
		data, err := it.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, a); err != nil {
			t.Fatal(err)
		}
		if want := "trace-" + a.Pod.Name; it.TraceID != want {
			t.Errorf("record %d of %s is traced %q, want %q", it.Seq, a.Pod.Name, it.TraceID, want)
		}
		out = append(out, Record{Seq: it.Seq, TraceID: it.TraceID, Attempt: a})
	}
	return out
}

func TestBufferEvictsOldest(t *testing.T) {
	b := NewBuffer(3, DefaultBufferBytes, "e")
	add(t, b, "a", "b", "c", "d", "e")
	if st := b.Stats(); st.Records != 3 || st.Last != 5 || st.Evicted != 2 {
		t.Errorf("Stats() = %+v; want 3 records, last 5, 2 evicted", st)
	}
	items, _, oldest, ok := b.After(2, MaxAnswerBytes)
	if !ok || oldest != 3 {
		t.Fatalf("After(2): ok %v oldest %d, want true 3", ok, oldest)
	}
	if diff := cmp.Diff([]string{"c", "d", "e"}, podNames(decoded(t, items))); diff != "" {
		t.Errorf("After(2) (-want +got):\n%s", diff)
	}
	if _, _, oldest, ok := b.After(1, MaxAnswerBytes); ok || oldest != 3 {
		t.Errorf("After(1) = ok %v oldest %d, want false 3: record 2 was evicted", ok, oldest)
	}
}

// TestBufferBoundsBytes checks that the buffer drops its oldest records
// once their compressed bytes pass its byte bound, counts them, keeps the newest
// record even when it alone is larger, and keeps its count bound.
func TestBufferBoundsBytes(t *testing.T) {
	b := NewBuffer(100, 1, "e")
	add(t, b, "a")
	one := b.Stats().Bytes
	b = NewBuffer(4, 3*one, "e")
	add(t, b, "a", "b", "c", "d", "e")
	if st := b.Stats(); st.Records != 3 || st.Bytes != 3*one || st.Evicted != 2 {
		t.Errorf("Stats() = %+v; want 3 records of %d bytes, 2 evicted", st, 3*one)
	}
	if _, _, oldest, ok := b.After(0, MaxAnswerBytes); ok || oldest != 3 {
		t.Errorf("After(0): ok %v oldest %d, want false 3", ok, oldest)
	}
	if items, _, _, _ := b.After(2, MaxAnswerBytes); cmp.Diff([]string{"c", "d", "e"}, podNames(decoded(t, items))) != "" {
		t.Errorf("After(2) = %v, want c d e", podNames(decoded(t, items)))
	}
	b = NewBuffer(4, one/2, "e")
	add(t, b, "a", "b")
	if st := b.Stats(); st.Records != 1 || st.Last != 2 || st.Evicted != 1 {
		t.Errorf("a buffer smaller than one record: Stats() = %+v; want the newest record kept, 1 evicted", st)
	}
}

// TestBufferRefusesUnencodable checks that a record JSON cannot encode is
// refused with an error and takes no sequence.
func TestBufferRefusesUnencodable(t *testing.T) {
	b := NewBuffer(3, DefaultBufferBytes, "e")
	add(t, b, "a")
	bad := &record.Attempt{Pod: record.PodRef{Name: "bad"}, Timing: record.Timing{Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if err := b.Add(bad, ""); err == nil {
		t.Fatal("Add of a record with a year-10000 time succeeded, want an encoding error")
	}
	add(t, b, "c")
	items, _, _, _ := b.After(0, MaxAnswerBytes)
	if diff := cmp.Diff([]string{"a", "c"}, podNames(decoded(t, items))); diff != "" {
		t.Errorf("After(0) (-want +got):\n%s", diff)
	}
	if last := b.Stats().Last; last != 2 {
		t.Errorf("last sequence %d, want 2: a refused record takes no sequence", last)
	}
}

// TestBufferAfterBoundsBytes checks that After returns no more JSON than
// asked for, at least one record, and a closed channel when it left some
// out.
func TestBufferAfterBoundsBytes(t *testing.T) {
	b := NewBuffer(10, DefaultBufferBytes, "e")
	add(t, b, "a", "b", "c", "d")
	one := b.ring[1].Size
	tests := []struct {
		name     string
		maxBytes int
		want     []string
		more     bool
	}{
		{"everything fits", 4 * one, []string{"a", "b", "c", "d"}, false},
		{"two fit", 2*one + one/2, []string{"a", "b"}, true},
		{"smaller than one record", 1, []string{"a"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, changed, _, ok := b.After(0, tt.maxBytes)
			if !ok {
				t.Fatal("After(0) found records evicted")
			}
			if diff := cmp.Diff(tt.want, podNames(decoded(t, items))); diff != "" {
				t.Errorf("After(0, %d) (-want +got):\n%s", tt.maxBytes, diff)
			}
			select {
			case <-changed:
				if !tt.more {
					t.Error("changed is closed, yet nothing was left out and nothing was added")
				}
			default:
				if tt.more {
					t.Error("changed is open, yet records after the returned ones exist")
				}
			}
		})
	}
}

// TestAnswersAreByteBounded checks that a list answer ends at the byte
// bound with the sequence of its last record, and that a watch from there
// delivers the rest in bounded batches, in order and without a gap.
func TestAnswersAreByteBounded(t *testing.T) {
	b := NewBuffer(100, DefaultBufferBytes, "e")
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprint("pod-", i)
	}
	add(t, b, names...)
	s := NewServer(b, time.Hour)
	s.answerBytes = 3 * b.ring[1].Size
	srv := httptest.NewServer(s)
	defer srv.Close()

	resp, body := get(t, srv.URL)
	var l List
	if err := json.Unmarshal(body, &l); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("list: %s %s", resp.Status, body)
	}
	if diff := cmp.Diff(names[:3], podNames(l.Items)); diff != "" || l.Seq != 3 || l.Newest != uint64(len(names)) {
		t.Fatalf("list answered seq %d and newest %d, want 3 and %d, names (-want +got):\n%s", l.Seq, l.Newest, len(names), diff)
	}
	wresp, err := http.Get(srv.URL + fmt.Sprintf("?watch=true&since=%d&epoch=e", l.Seq))
	if err != nil {
		t.Fatal(err)
	}
	defer wresp.Body.Close()
	lines := bufio.NewScanner(wresp.Body)
	lines.Buffer(nil, 1<<20)
	got := podNames(l.Items)
	for len(got) < len(names) && lines.Scan() {
		var e Event
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type == EventAdded {
			got = append(got, e.Object.Pod.Name)
		}
	}
	if diff := cmp.Diff(names, got); diff != "" {
		t.Errorf("list then watch (-want +got):\n%s", diff)
	}
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp, body
}

func TestServerList(t *testing.T) {
	b := NewBuffer(2, DefaultBufferBytes, "epoch-1")
	add(t, b, "a", "b", "c")
	srv := httptest.NewServer(NewServer(b, time.Hour))
	defer srv.Close()

	tests := []struct {
		query     string
		code      int
		wantNames []string
		wantSeq   uint64
	}{
		{"", http.StatusOK, []string{"b", "c"}, 3},
		{"?since=2", http.StatusOK, []string{"c"}, 3},
		{"?since=3", http.StatusOK, nil, 3},
		{"?since=0", http.StatusGone, nil, 0},
		{"?since=4", http.StatusBadRequest, nil, 0},
		{"?since=-1", http.StatusBadRequest, nil, 0},
		{"?watch=sometimes", http.StatusBadRequest, nil, 0},
		{"?epoch=epoch-0", http.StatusGone, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp, body := get(t, srv.URL+tt.query)
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.code, body)
			}
			if tt.code != http.StatusOK {
				var msg map[string]any
				if err := json.Unmarshal(body, &msg); err != nil || msg["message"] == "" {
					t.Errorf("error body %s has no message", body)
				}
				return
			}
			var l List
			if err := json.Unmarshal(body, &l); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantNames, podNames(l.Items)); diff != "" || l.Seq != tt.wantSeq || l.Epoch != "epoch-1" || l.Version != record.FormatVersion {
				t.Errorf("list: version %d seq %d epoch %q, names (-want +got):\n%s", l.Version, l.Seq, l.Epoch, diff)
			}
			for i, it := range l.Items {
				if want := l.Seq - uint64(len(l.Items)-1-i); it.Seq != want || it.TraceID != "trace-"+it.Attempt.Pod.Name {
					t.Errorf("item %d: seq %d, trace %q; want %d, trace-%s", i, it.Seq, it.TraceID, want, it.Attempt.Pod.Name)
				}
			}
		})
	}
	if resp, err := http.Post(srv.URL, "application/json", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v, want 405", resp.Status, err)
	}
}

func TestServerWatch(t *testing.T) {
	b := NewBuffer(100, DefaultBufferBytes, "e")
	add(t, b, "a")
	s := NewServer(b, 20*time.Millisecond)
	srv := httptest.NewServer(s)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "?watch=true&since=0&epoch=e")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := func() Event {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("watch ended: %v", lines.Err())
		}
		var e Event
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	if e := next(); e.Type != EventAdded || e.Version != record.FormatVersion || e.Seq != 1 || e.TraceID != "trace-a" || e.Object.Pod.Name != "a" {
		t.Errorf("first event %+v, want ADDED a, version %d, seq 1, trace-a", e, record.FormatVersion)
	}
	add(t, b, "b", "c")
	for _, want := range []string{"b", "c"} {
		e := next()
		for e.Type == EventBookmark {
			e = next()
		}
		if e.Object.Pod.Name != want {
			t.Errorf("event %+v, want %s", e, want)
		}
	}
	if e := next(); e.Type != EventBookmark || e.Seq != 3 {
		t.Errorf("idle watch sent %+v, want a bookmark at 3", e)
	}
	if s.Watchers() != 1 {
		t.Errorf("Watchers() = %d, want 1", s.Watchers())
	}
}

// TestServerWatchEndsWhenOverrun checks that a watcher overrun by writers is
// cut off, never waited for, and then told the exact gap.
func TestServerWatchEndsWhenOverrun(t *testing.T) {
	b := NewBuffer(2, DefaultBufferBytes, "e")
	srv := httptest.NewServer(NewServer(b, time.Hour))
	defer srv.Close()
	for i := range 10 {
		add(t, b, fmt.Sprint(i))
	}
	resp, body := get(t, srv.URL+"?watch=true&since=3&epoch=e")
	var g Gone
	if err := json.Unmarshal(body, &g); err != nil || resp.StatusCode != http.StatusGone || g.Oldest != 9 {
		t.Errorf("watch from 3 after 10 adds to a buffer of 2: %s %s, want 410 with oldest 9", resp.Status, body)
	}
}

// TestStalledWatcherIsDisconnected: a reader that opens a watch and never
// reads is cut off once a write waits past the write timeout, so that the
// records its answer holds are released. Without the deadline the watch
// would block in its write for as long as the reader stays connected.
func TestStalledWatcherIsDisconnected(t *testing.T) {
	nodes := make([]string, 2000)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-with-a-long-name-to-fill-the-socket-buffers-%05d", i)
	}
	b := NewBuffer(200, DefaultBufferBytes, "e")
	s := NewServer(b, time.Hour)
	s.writeTimeout = 200 * time.Millisecond
	srv := httptest.NewServer(s)
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET /?watch=true&since=0 HTTP/1.1\r\nHost: stream\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return s.Watchers() == 1, nil
	}); err != nil {
		t.Fatal("the watch never opened")
	}
	// About 30 MB of records, far more than the sockets buffer.
	for i := range 200 {
		a := recordtest.MakeAttempt("ns", fmt.Sprint("p", i), "uid").Rejected("TaintToleration", "taint", nodes...).Obj()
		if err := b.Add(a, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return s.Watchers() == 0, nil
	}); err != nil {
		t.Errorf("a watch whose reader stalled is still open %v after the write timeout", 10*time.Second)
	}
}

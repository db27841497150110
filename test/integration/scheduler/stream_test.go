package scheduler

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/testutil"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/stream"
	"github.com/schedscope/schedscope/test/framework"
)

// startDedicatedScheduler starts a schedscope-scheduler with one profile,
// profile, so that its records and metrics are the test's alone.
func startDedicatedScheduler(t *testing.T, profile string, flags ...string) *framework.Scheduler {
	t.Helper()
	config := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: " + profile + "\n"
	s, err := controlPlane.StartScheduler(context.Background(), profile, "schedscope-scheduler", config, flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// scrape returns a gatherer over what url serves now.
func scrape(t *testing.T, url string) prometheus.Gatherer {
	t.Helper()
	g, _, err := framework.Scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestRecordStream(t *testing.T) {
	const profile = "stream-test"
	s := startDedicatedScheduler(t, profile, "--record-buffer-size=4", "--record-stream-bookmark-interval=200ms")
	ns := createNamespace(t)
	createNodes(t, nodeSpec{name: "stream-node", cpu: "100", memory: "100Gi"})

	initial, err := framework.ListRecords(s.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	if initial.Seq != 0 || len(initial.Items) != 0 || initial.Epoch == "" {
		t.Fatalf("initial list = %+v, want an empty stream with an epoch", initial)
	}

	watch, err := http.Get(fmt.Sprintf("%s?watch=true&since=0&epoch=%s", s.StreamURL, initial.Epoch))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()
	if watch.StatusCode != http.StatusOK {
		t.Fatalf("watch: %s", watch.Status)
	}
	events := bufio.NewScanner(watch.Body)
	events.Buffer(make([]byte, 1<<20), 1<<22)

	// Nine pods, one at a time: the watch sees them in order, the buffer of
	// four keeps the last four, and five are evicted.
	var names []string
	for i := range 9 {
		pod := createPod(t, st.MakePod().Namespace(ns).Name(fmt.Sprintf("p%d", i)).SchedulerName(profile).Obj())
		waitForBinding(t, pod)
		names = append(names, pod.Name)
	}
	var watched []string
	for len(watched) < 9 && events.Scan() {
		var e stream.Event
		if err := json.Unmarshal(events.Bytes(), &e); err != nil {
			t.Fatalf("watch event %q: %v", events.Text(), err)
		}
		if e.Type != stream.EventAdded {
			continue
		}
		if e.Seq != uint64(len(watched)+1) || e.Version != record.FormatVersion {
			t.Errorf("event %d has sequence %d, record format version %d", len(watched)+1, e.Seq, e.Version)
		}
		watched = append(watched, e.Object.Pod.Name)
	}
	if strings.Join(watched, ",") != strings.Join(names, ",") {
		t.Errorf("watched %v, want %v in order", watched, names)
	}

	l, err := framework.ListRecords(s.StreamURL)
	if err != nil {
		t.Fatal(err)
	}
	if l.Seq != 9 || l.Oldest != 6 || len(l.Items) != 4 || l.Items[0].Attempt.Pod.Name != "p5" || l.Epoch != initial.Epoch {
		t.Errorf("list after overflow: seq %d oldest %d items %d epoch %q, want 9, 6, 4 from p5 in epoch %q", l.Seq, l.Oldest, len(l.Items), l.Epoch, initial.Epoch)
	}

	gone := func(query string) stream.Gone {
		t.Helper()
		resp, err := http.Get(s.StreamURL + "?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusGone {
			t.Fatalf("GET ?%s: %s, want 410 Gone", query, resp.Status)
		}
		var g stream.Gone
		if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := gone("watch=true&since=2&epoch=" + initial.Epoch); g.Oldest != 6 {
		t.Errorf("410 after overflow says oldest %d, want 6 (a gap of 3 records after 2)", g.Oldest)
	}
	if g := gone("watch=true&since=9&epoch=another-epoch"); g.Epoch != initial.Epoch {
		t.Errorf("410 for another epoch names epoch %q, want %q", g.Epoch, initial.Epoch)
	}

	for query, want := range map[string]int{"since=x": http.StatusBadRequest, "watch=maybe": http.StatusBadRequest, "since=99": http.StatusBadRequest} {
		resp, err := http.Get(s.StreamURL + "?" + query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET ?%s: %s, want %d", query, resp.Status, want)
		}
	}

	expected := `
# HELP schedscope_record_buffer_evicted_total [ALPHA] Decision records dropped from the full record stream buffer (its count or its bytes); a reader that had not read them must relist.
# TYPE schedscope_record_buffer_evicted_total counter
schedscope_record_buffer_evicted_total 5
# HELP schedscope_record_buffer_records [ALPHA] Decision records held in the record stream's buffer.
# TYPE schedscope_record_buffer_records gauge
schedscope_record_buffer_records 4
# HELP schedscope_record_dropped_total [ALPHA] Scheduling attempts that never became decision records because the record queue was full.
# TYPE schedscope_record_dropped_total counter
schedscope_record_dropped_total 0
# HELP schedscope_record_stream_watchers [ALPHA] Open watches of the record stream.
# TYPE schedscope_record_stream_watchers gauge
schedscope_record_stream_watchers 1
`
	if err := testutil.GatherAndCompare(scrape(t, s.MetricsURL), strings.NewReader(expected),
		"schedscope_record_buffer_evicted_total", "schedscope_record_buffer_records", "schedscope_record_dropped_total", "schedscope_record_stream_watchers"); err != nil {
		t.Error(err)
	}
}

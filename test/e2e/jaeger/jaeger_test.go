package jaeger

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/tracing"

	"github.com/schedscope/schedscope/test/framework"
	"github.com/schedscope/schedscope/test/freeport"
)

// jaegerProcess is a Jaeger started for a test, with its endpoints.
type jaegerProcess struct {
	otlpGRPC, otlpHTTP string
	query              string
}

// otlpEndpoint returns the host:port where Jaeger receives OTLP over
// protocol.
func (p *jaegerProcess) otlpEndpoint(protocol tracing.Protocol) string {
	if protocol == tracing.ProtocolHTTPProtobuf {
		return p.otlpHTTP
	}
	return p.otlpGRPC
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		port, err := freeport.Get()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = port
	}
	return ports
}

// startJaeger runs bin/jaeger with tools/jaeger/config.yaml on free
// loopback ports until the test ends, and waits until it is healthy.
func startJaeger(t *testing.T) *jaegerProcess {
	t.Helper()
	root := framework.RepoRoot()
	bin := os.Getenv("JAEGER_BIN")
	if bin == "" {
		bin = filepath.Join(root, "bin", "jaeger")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Jaeger binary %s not found (%v): run `make build-tools` first, or set JAEGER_BIN", bin, err)
	}
	ports := freePorts(t, 5)
	p := &jaegerProcess{
		otlpGRPC: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		otlpHTTP: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		query:    fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
	}
	health := fmt.Sprintf("http://127.0.0.1:%d/status", ports[4])
	logPath := filepath.Join(t.TempDir(), "jaeger.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", filepath.Join(root, "tools", "jaeger", "config.yaml"))
	cmd.Env = append(os.Environ(),
		"JAEGER_OTLP_GRPC_PORT="+strconv.Itoa(ports[0]),
		"JAEGER_OTLP_HTTP_PORT="+strconv.Itoa(ports[1]),
		"JAEGER_QUERY_HTTP_PORT="+strconv.Itoa(ports[2]),
		"JAEGER_QUERY_GRPC_PORT="+strconv.Itoa(ports[3]),
		"JAEGER_HEALTH_PORT="+strconv.Itoa(ports[4]),
		"JAEGER_LOG_LEVEL=warn",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		// Idle keep-alive connections would hold up Jaeger's shutdown.
		http.DefaultClient.CloseIdleConnections()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				t.Logf("Jaeger log:\n%s", data)
			}
		}
	})
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("jaeger exited")
		default:
		}
		resp, err := http.Get(health)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("Jaeger did not become healthy at %s: %v", health, err)
	}
	return p
}

// The parts of Jaeger's /api/traces answer the tests read.
type (
	jaegerResponse struct {
		Data   []jaegerTrace `json:"data"`
		Errors []struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
		} `json:"errors"`
	}
	jaegerTrace struct {
		TraceID   string `json:"traceID"`
		Spans     []jaegerSpan
		Processes map[string]struct {
			ServiceName string      `json:"serviceName"`
			Tags        []jaegerTag `json:"tags"`
		} `json:"processes"`
	}
	jaegerSpan struct {
		TraceID       string `json:"traceID"`
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		// StartTime and Duration are in microseconds.
		StartTime int64       `json:"startTime"`
		Duration  int64       `json:"duration"`
		Tags      []jaegerTag `json:"tags"`
		Logs      []struct {
			Fields []jaegerTag `json:"fields"`
		} `json:"logs"`
	}
	jaegerTag struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	}
)

func (s jaegerSpan) tag(key string) any {
	for _, tag := range s.Tags {
		if tag.Key == key {
			return tag.Value
		}
	}
	return nil
}

func (s jaegerSpan) start() time.Time { return time.UnixMicro(s.StartTime) }
func (s jaegerSpan) end() time.Time   { return time.UnixMicro(s.StartTime + s.Duration) }
func (s jaegerSpan) duration() time.Duration {
	return time.Duration(s.Duration) * time.Microsecond
}

// parent returns the span's parent in the same trace, if any.
func (s jaegerSpan) parent(tr jaegerTrace) (jaegerSpan, bool) {
	for _, ref := range s.References {
		if ref.RefType != "CHILD_OF" || ref.TraceID != s.TraceID {
			continue
		}
		for _, p := range tr.Spans {
			if p.SpanID == ref.SpanID {
				return p, true
			}
		}
	}
	return jaegerSpan{}, false
}

// tree lists the trace's spans as paths of operation names from the root,
// in start order.
func (tr jaegerTrace) tree() []string {
	spans := slices.Clone(tr.Spans)
	paths := map[string]string{}
	var path func(s jaegerSpan) string
	path = func(s jaegerSpan) string {
		if p, ok := s.parent(tr); ok {
			return path(p) + "/" + s.OperationName
		}
		return s.OperationName
	}
	for _, s := range spans {
		paths[s.SpanID] = path(s)
	}
	slices.SortStableFunc(spans, func(a, b jaegerSpan) int {
		if a.StartTime != b.StartTime {
			return int(a.StartTime - b.StartTime)
		}
		return strings.Compare(paths[a.SpanID], paths[b.SpanID])
	})
	var out []string
	for _, s := range spans {
		out = append(out, paths[s.SpanID])
	}
	return out
}

func (tr jaegerTrace) span(name string) (jaegerSpan, bool) {
	for _, s := range tr.Spans {
		if s.OperationName == name {
			return s, true
		}
	}
	return jaegerSpan{}, false
}

// findTraces asks Jaeger for the traces of schedscope-scheduler whose spans
// have the given tags.
func (p *jaegerProcess) findTraces(ctx context.Context, tags map[string]string, from, to time.Time) ([]jaegerTrace, error) {
	tagJSON, err := json.Marshal(tags)
	if err != nil {
		return nil, err
	}
	q := url.Values{
		"service": {tracing.ServiceName},
		"tags":    {string(tagJSON)},
		"start":   {strconv.FormatInt(from.UnixMicro(), 10)},
		"end":     {strconv.FormatInt(to.UnixMicro(), 10)},
		"limit":   {"100"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.query+"/api/traces?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", req.URL, resp.Status, body)
	}
	var r jaegerResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", req.URL, err)
	}
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("GET %s: errors %+v", req.URL, r.Errors)
	}
	return r.Data, nil
}

// sameTraceID compares trace IDs, which Jaeger may print without leading
// zeros.
func sameTraceID(a, b string) bool {
	return strings.TrimLeft(a, "0") == strings.TrimLeft(b, "0")
}

// TestAttemptsInJaeger traces two attempts of one pod, the first
// unschedulable and the second bound after a Permit wait, and a third
// attempt of another pod, over each OTLP protocol, then finds the pod's
// traces in Jaeger by its name and checks their spans, their timing and
// the link between the attempts.
func TestAttemptsInJaeger(t *testing.T) {
	for _, tt := range []struct {
		name     string
		protocol tracing.Protocol
	}{{"grpc", tracing.ProtocolGRPC}, {"http", tracing.ProtocolHTTPProtobuf}} {
		t.Run(tt.name, func(t *testing.T) { testAttemptsInJaeger(t, tt.protocol) })
	}
}

func testAttemptsInJaeger(t *testing.T, protocol tracing.Protocol) {
	j := startJaeger(t)
	ctx := context.Background()
	tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{
		Endpoint:               ptr.To(j.otlpEndpoint(protocol)),
		SamplingRatePerMillion: ptr.To[int32](1_000_000),
	}, tracing.Options{Profiles: []string{"default-scheduler"}, Version: "v0.0.0-e2e", Protocol: protocol})
	if err != nil {
		t.Fatalf("tracing.New: %v", err)
	}
	defer func() {
		if err := tr.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()

	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "checkout-7d9f", UID: types.UID("3f1c2a9e-0b5d-4f4e-9a51-1d2c3b4a5f60")}}
	first := unschedulableAttempt(pod, base)
	second := scheduledAttempt(pod, base.Add(10*time.Second))
	other := scheduledAttempt(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-5c8b", UID: "other-uid"}}, base)

	firstID := tr.Trace(pod, first)
	tr.Trace(nil, other)
	secondID := tr.Trace(pod, second)
	if firstID == "" || secondID == "" {
		t.Fatalf("attempts not sampled at the full rate: %q, %q", firstID, secondID)
	}
	if err := tr.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush: %v", err)
	}

	var traces []jaegerTrace
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		traces, err = j.findTraces(ctx, map[string]string{"k8s.pod.name": pod.Name}, base.Add(-time.Minute), time.Now().Add(time.Minute))
		if err != nil {
			t.Logf("querying Jaeger: %v", err)
			return false, nil
		}
		return len(traces) >= 2, nil
	})
	if err != nil {
		t.Fatalf("Jaeger returned %d traces of pod %s, want 2: %v", len(traces), pod.Name, err)
	}
	if len(traces) != 2 {
		t.Fatalf("Jaeger returned %d traces of pod %s, want 2", len(traces), pod.Name)
	}
	byID := map[string]jaegerTrace{}
	for _, trace := range traces {
		switch {
		case sameTraceID(trace.TraceID, firstID):
			byID[firstID] = trace
		case sameTraceID(trace.TraceID, secondID):
			byID[secondID] = trace
		default:
			t.Errorf("unexpected trace %s for pod %s", trace.TraceID, pod.Name)
		}
	}

	const (
		root    = tracing.SpanAttempt
		cycle   = root + "/" + tracing.SpanSchedulingCycle
		binding = root + "/" + tracing.SpanBindingCycle
	)
	t.Run("unschedulable attempt", func(t *testing.T) {
		trace := byID[firstID]
		want := []string{root, root + "/QueueWait", cycle, cycle + "/PreFilter", cycle + "/Filter", cycle + "/PostFilter"}
		if diff := cmp.Diff(want, trace.tree()); diff != "" {
			t.Errorf("spans (-want +got):\n%s", diff)
		}
		r, _ := trace.span(root)
		wantTags := map[string]any{
			"k8s.pod.name":          pod.Name,
			"k8s.namespace.name":    pod.Namespace,
			"k8s.pod.uid":           string(pod.UID),
			"schedscope.attempt":    float64(1),
			"schedscope.result":     "unschedulable",
			"schedscope.rejections": `["TaintToleration=3","NodeResourcesFit=2"]`,
			"error":                 true,
		}
		gotTags := map[string]any{}
		for k := range wantTags {
			gotTags[k] = r.tag(k)
		}
		if diff := cmp.Diff(wantTags, gotTags); diff != "" {
			t.Errorf("root tags (-want +got):\n%s", diff)
		}
		checkTiming(t, trace, first)
	})
	t.Run("scheduled attempt linked to the first", func(t *testing.T) {
		trace := byID[secondID]
		want := []string{
			root, root + "/QueueWait", cycle,
			cycle + "/PreFilter", cycle + "/Filter", cycle + "/PreScore", cycle + "/Score", cycle + "/Reserve", cycle + "/Permit",
			binding, binding + "/WaitOnPermit", binding + "/PreBind", binding + "/Bind", binding + "/PostBind",
		}
		if diff := cmp.Diff(want, trace.tree()); diff != "" {
			t.Errorf("spans (-want +got):\n%s", diff)
		}
		r, _ := trace.span(root)
		if got := r.tag("k8s.node.name"); got != "node-b" {
			t.Errorf("root k8s.node.name = %v, want node-b", got)
		}
		linked := false
		for _, ref := range r.References {
			linked = linked || sameTraceID(ref.TraceID, firstID)
		}
		if !linked {
			t.Errorf("second attempt's references %+v do not reach the first attempt's trace %s", r.References, firstID)
		}
		checkTiming(t, trace, second)
		var sample strings.Builder
		spans := slices.Clone(trace.Spans)
		slices.SortStableFunc(spans, func(a, b jaegerSpan) int { return int(a.StartTime - b.StartTime) })
		for _, s := range spans {
			fmt.Fprintf(&sample, "\n  %-17s %9v %9v", s.OperationName, s.start().Sub(r.start()), s.duration())
		}
		t.Logf("trace %s as Jaeger returned it (span, offset, duration):%s", trace.TraceID, sample.String())
	})
	t.Run("process", func(t *testing.T) {
		for _, trace := range traces {
			for _, p := range trace.Processes {
				if p.ServiceName != tracing.ServiceName {
					t.Errorf("process service %q, want %q", p.ServiceName, tracing.ServiceName)
				}
			}
		}
	})
}

// checkTiming checks that the trace's durations add up within the attempt:
// the root lasts from Queued to Finished, the queue wait and the cycles
// have the recorded durations and do not overlap, and each extension point
// lies within its cycle.
func checkTiming(t *testing.T, trace jaegerTrace, rec *record.Attempt) {
	t.Helper()
	root, ok := trace.span(tracing.SpanAttempt)
	if !ok {
		t.Fatalf("no %s span", tracing.SpanAttempt)
	}
	if got, want := root.duration(), rec.Timing.Finished.Sub(rec.Timing.Queued); got != want {
		t.Errorf("attempt lasted %v, want %v", got, want)
	}
	want := map[string]time.Duration{
		tracing.SpanQueueWait:       rec.Timing.QueueWait,
		tracing.SpanSchedulingCycle: rec.Timing.SchedulingCycle,
		tracing.SpanBindingCycle:    rec.Timing.BindingCycle,
	}
	var phases time.Duration
	var lastEnd time.Time
	for _, name := range []string{tracing.SpanQueueWait, tracing.SpanSchedulingCycle, tracing.SpanBindingCycle} {
		s, ok := trace.span(name)
		if !ok {
			continue
		}
		if s.duration() != want[name] {
			t.Errorf("%s lasted %v, want %v", name, s.duration(), want[name])
		}
		if s.start().Before(lastEnd) {
			t.Errorf("%s starts at %v, before the previous phase ended at %v", name, s.start(), lastEnd)
		}
		lastEnd = s.end()
		phases += s.duration()
	}
	if phases > root.duration() {
		t.Errorf("queue wait and cycles add up to %v, more than the attempt's %v", phases, root.duration())
	}
	for _, s := range trace.Spans {
		parent, ok := s.parent(trace)
		if !ok {
			continue
		}
		if s.start().Before(parent.start()) || s.end().After(parent.end()) {
			t.Errorf("%s [%v, %v] lies outside its parent %s [%v, %v]", s.OperationName, s.start(), s.end(), parent.OperationName, parent.start(), parent.end())
		}
	}
	// The extension points of a cycle add up to no more than the cycle.
	sums := map[string]time.Duration{}
	for _, s := range trace.Spans {
		if parent, ok := s.parent(trace); ok && parent.OperationName != tracing.SpanAttempt {
			sums[parent.SpanID] += s.duration()
		}
	}
	for _, s := range trace.Spans {
		if sum, ok := sums[s.SpanID]; ok && sum > s.duration() {
			t.Errorf("the points of %s add up to %v, more than its %v", s.OperationName, sum, s.duration())
		}
	}
}

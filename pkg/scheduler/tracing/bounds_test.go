package tracing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/wait"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
)

// maxSpanBytes bounds each span of hugeRecord, protobuf-encoded as it is
// exported: at most three strings or lists of about MaxAttributeLength
// bytes each (the PostFilter span's reasons, its status and its plugin
// event's reasons) and a few small attributes.
const maxSpanBytes = 16 << 10

// hugeRecord is an unschedulable attempt whose texts are as large as a
// hostile pod could make them if nothing cut them: a 100 KB multi-byte
// message and, at PostFilter (its point, its plugin) and in a Filter
// verdict group, a thousand reasons of which one is 20 KB.
func hugeRecord() *record.Attempt {
	rec := unschedulableRecord("huge", "uid-huge")
	rec.Message = strings.Repeat("Grüße, 世界! 🚀 ", 100<<10/20)
	reasons := make([]string, 1000)
	for i := range reasons {
		reasons[i] = fmt.Sprintf("Insufficient hostile.example.com/r%04d-%s", i, strings.Repeat("ü", 40))
	}
	reasons[3] = strings.Repeat("🚀", 5000)
	rec.Points[2].Reasons = reasons
	rec.Plugins[2].Reasons = reasons
	rec.Filter[0].Reasons = reasons
	return rec
}

// TestSpansBounded exports hugeRecord over OTLP gRPC: every string is at
// most MaxAttributeLength bytes, every list at most 10 values, and every
// span at most maxSpanBytes.
func TestSpansBounded(t *testing.T) {
	r, endpoint := startReceiver(t)
	ctx := context.Background()
	tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{
		Endpoint: &endpoint, SamplingRatePerMillion: ptr.To[int32](1_000_000),
	}, tracing.Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer func() { _ = tr.Shutdown(ctx) }()
	rec := hugeRecord()
	if id := tr.Trace(podOf(rec, nil), rec); id == "" {
		t.Fatal("attempt not sampled at 100%")
	}
	if err := tr.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush: %v", err)
	}
	var spans []*tracepb.Span
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, spans, _ = r.received()
		return len(spans) >= len(unschedulableTree), nil
	}); err != nil {
		t.Fatalf("received %d spans, want %d: %v", len(spans), len(unschedulableTree), err)
	}
	var statuses int
	for _, s := range spans {
		size := proto.Size(s)
		if size > maxSpanBytes {
			t.Errorf("span %s is %d bytes, more than %d", s.Name, size, maxSpanBytes)
		}
		if m := s.GetStatus().GetMessage(); len(m) > tracing.MaxAttributeLength {
			t.Errorf("span %s: status message of %d bytes, more than %d", s.Name, len(m), tracing.MaxAttributeLength)
		} else if len(m) > tracing.MaxAttributeLength-64 {
			statuses++
		}
		check := func(where string, attrs map[string]any) {
			for k, v := range attrs {
				switch v := v.(type) {
				case string:
					if len(v) > tracing.MaxAttributeLength {
						t.Errorf("span %s: %s %s is %d bytes, more than %d", s.Name, where, k, len(v), tracing.MaxAttributeLength)
					}
				case []string:
					if len(v) > 10 {
						t.Errorf("span %s: %s %s has %d values, more than 10", s.Name, where, k, len(v))
					}
					for i, e := range v {
						if len(e) > tracing.MaxAttributeLength {
							t.Errorf("span %s: %s %s[%d] is %d bytes, more than %d", s.Name, where, k, i, len(e), tracing.MaxAttributeLength)
						}
					}
				}
			}
		}
		check("attribute", otlpAttrs(s.Attributes))
		for _, e := range s.Events {
			check("event "+e.Name+" attribute", otlpAttrs(e.Attributes))
		}
		t.Logf("span %s: %d bytes", s.Name, size)
	}
	// The root's message and the PostFilter span's reasons were cut, not
	// dropped.
	if statuses != 2 {
		t.Errorf("%d spans have a status message of about %d bytes, want 2 (the attempt and PostFilter)", statuses, tracing.MaxAttributeLength)
	}
}

package framework

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// TestHistogramQuantile: the quantile is interpolated within its bucket
// over the matching series only, the highest finite bound beyond them,
// and 0 without observations.
func TestHistogramQuantile(t *testing.T) {
	series := func(profile string, count uint64, buckets ...uint64) *dto.Metric {
		h := &dto.Histogram{SampleCount: proto.Uint64(count)}
		for i, c := range buckets {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(float64(i + 1)), CumulativeCount: proto.Uint64(c)})
		}
		return &dto.Metric{Label: []*dto.LabelPair{{Name: proto.String("profile"), Value: proto.String(profile)}}, Histogram: h}
	}
	// a: 10 in (0,1], 10 in (1,2], 20 in (2,3]; b would move every quantile.
	f := &dto.MetricFamily{Metric: []*dto.Metric{series("a", 40, 10, 20, 40), series("b", 100, 100, 100, 100)}}
	a := map[string]string{"profile": "a"}
	for _, tt := range []struct {
		q, want float64
	}{{0.25, 1}, {0.5, 2}, {0.75, 2.5}, {0.125, 0.5}} {
		if got := HistogramQuantile(f, a, tt.q); got != tt.want {
			t.Errorf("quantile %v: %v, want %v", tt.q, got, tt.want)
		}
	}
	beyond := &dto.MetricFamily{Metric: []*dto.Metric{series("a", 10, 1, 2, 3)}}
	if got := HistogramQuantile(beyond, a, 0.99); got != 3 {
		t.Errorf("a quantile beyond the buckets: %v, want the highest bound 3", got)
	}
	if got := HistogramQuantile(f, map[string]string{"profile": "c"}, 0.5); got != 0 {
		t.Errorf("no observations: %v, want 0", got)
	}
}

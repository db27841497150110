package framework

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/testutil"
)

// Scrape GETs a /metrics endpoint with the admin token and returns a
// gatherer over what it served, for testutil.GatherAndCompare, and the
// parsed families by name.
func Scrape(url string) (prometheus.Gatherer, map[string]*dto.MetricFamily, error) {
	body, err := GetWithToken(url)
	if err != nil {
		return nil, nil, err
	}
	families, err := testutil.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		out := make([]*dto.MetricFamily, 0, len(families))
		for _, f := range families {
			out = append(out, f)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
		return out, nil
	}), families, nil
}

// Sum adds the values of a counter or gauge family over the series whose
// labels include every name=value pair of match.
func Sum(f *dto.MetricFamily, match map[string]string) float64 {
	var total float64
	for _, m := range f.GetMetric() {
		if !hasLabels(m, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// HistogramQuantile estimates the q-quantile of a histogram family over
// the series whose labels include every name=value pair of match, as
// Prometheus's histogram_quantile does: linear within the bucket the
// quantile falls in, the highest finite bound when it falls beyond. It is
// 0 when the series observed nothing.
func HistogramQuantile(f *dto.MetricFamily, match map[string]string, q float64) float64 {
	type bucket struct{ upper, count float64 }
	var buckets []bucket
	var total float64
	for _, m := range f.GetMetric() {
		if !hasLabels(m, match) || m.Histogram == nil {
			continue
		}
		total += float64(m.GetHistogram().GetSampleCount())
		for i, b := range m.GetHistogram().GetBucket() {
			if i == len(buckets) {
				buckets = append(buckets, bucket{upper: b.GetUpperBound()})
			}
			buckets[i].count += float64(b.GetCumulativeCount())
		}
	}
	if total == 0 {
		return 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range buckets {
		if b.count >= rank {
			if b.count == below {
				return b.upper
			}
			return lower + (b.upper-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.upper, b.count
	}
	return lower
}

func hasLabels(m *dto.Metric, match map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := match[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(match)
}

// ScheduleAttempts returns upstream's scheduler_schedule_attempts_total of
// profile by result: scheduled, unschedulable and error.
func ScheduleAttempts(families map[string]*dto.MetricFamily, profile string) map[string]float64 {
	out := map[string]float64{}
	for _, result := range []string{"scheduled", "unschedulable", "error"} {
		out[result] = Sum(families["scheduler_schedule_attempts_total"], map[string]string{"profile": profile, "result": result})
	}
	return out
}

// Counter returns the value of an unlabelled counter, or an error when
// the families hold no such counter: a missing counter is no zero.
func Counter(families map[string]*dto.MetricFamily, name string) (float64, error) {
	f, ok := families[name]
	if !ok || len(f.GetMetric()) != 1 {
		return 0, fmt.Errorf("no unlabelled counter %s is served", name)
	}
	return Sum(f, nil), nil
}

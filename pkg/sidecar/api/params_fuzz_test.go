package api

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
)

// FuzzParseParams feeds arbitrary query strings to every parameter parser:
// they must never panic, must return either a value or a *ParamError, and
// what they accept must be within bounds.
func FuzzParseParams(f *testing.F) {
	for _, seed := range []string{
		"", "limit=10", "limit=-1", "limit=99999999999999999999", "limit=1&limit=2",
		"attempt=3&node=n1", "node=n1&offset=2", "group=0&offset=10&limit=100", "node=%00",
		"by=plugin&since=1h", "by=node&since=2026-01-02T03:04:05Z&until=1m", "by=plugin&since=-5m",
		"by=node&since=9999999h", "by=x", "%zz", "a=b;c=d", "since=1e9h&by=node",
		"by=node&since=2h&step=1m", "by=plugin&since=1h&step=1s", "by=plugin&until=5m&step=1h",
	} {
		f.Add(seed)
	}
	now := recordtest.Base
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		check := func(err error) {
			var pe *ParamError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("%q: error %v is not a *ParamError", raw, err)
			}
			if pe != nil && pe.Param == "" {
				t.Fatalf("%q: error %v names no parameter", raw, err)
			}
		}
		limit, err := ParseLimit(q)
		check(err)
		if err == nil && (limit < 1 || limit > v1alpha1.MaxLimit) {
			t.Fatalf("%q: limit %d accepted", raw, limit)
		}
		p, err := ParseExplainParams(q)
		check(err)
		if err == nil && (p.Offset < 0 || p.Limit < 1 || p.Limit > v1alpha1.MaxLimit || p.Attempt < 0) {
			t.Fatalf("%q: explain parameters %+v accepted", raw, p)
		}
		rq, err := ParseRejectionParams(q, now)
		check(err)
		if err == nil {
			if rq.Step > 0 && (rq.Buckets() < 1 || rq.Buckets() > v1alpha1.MaxBuckets) {
				t.Fatalf("%q: %d buckets accepted", raw, rq.Buckets())
			}
			if rq.Since.After(now) || !rq.Until.IsZero() && !rq.Since.Before(rq.Until) {
				t.Fatalf("%q: window %v..%v accepted", raw, rq.Since, rq.Until)
			}
			if rq.Since.Before(now.Add(-v1alpha1.MaxRejectionAge)) && q.Get(v1alpha1.ParamSince) != "" {
				if _, err := time.ParseDuration(q.Get(v1alpha1.ParamSince)); err == nil {
					t.Fatalf("%q: duration beyond the maximum accepted", raw)
				}
			}
		}
		check(validatePod(q.Get("namespace"), q.Get("name")))
		check(validateUID(q.Get("uid")))
	})
}

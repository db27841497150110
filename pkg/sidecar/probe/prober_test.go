package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/schedscope/schedscope/pkg/sidecar/metrics"
)

func TestProber(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Error(w, "[-]leaderElection failed", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	m := metrics.NewMetrics(reg)
	p := &Prober{
		URLs:     map[string]string{metrics.ProbeLiveness: srv.URL + "/healthz", metrics.ProbeReadiness: srv.URL + "/readyz"},
		Client:   srv.Client(),
		Interval: time.Second,
		Metrics:  m,
	}
	p.ProbeOnce(context.Background())
	want := `
# HELP schedscope_scheduler_up Whether the scheduler's health endpoint answered 200 on the last probe, by probe (liveness, readiness).
# TYPE schedscope_scheduler_up gauge
schedscope_scheduler_up{probe="liveness"} 1
schedscope_scheduler_up{probe="readiness"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "schedscope_scheduler_up"); err != nil {
		t.Error(err)
	}
	srv.Close()
	p.ProbeOnce(context.Background())
	if got := testutil.ToFloat64(m.SchedulerUp.WithLabelValues(metrics.ProbeLiveness)); got != 0 {
		t.Errorf("liveness %v after the scheduler went away, want 0", got)
	}
}

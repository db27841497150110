// Package probe probes the scheduler's health endpoints as the sidecar sees
// them and exports the answers as schedscope_scheduler_up.
package probe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/schedscope/schedscope/pkg/sidecar/metrics"
)

// Prober probes the scheduler's health endpoints, as the sidecar sees them.
type Prober struct {
	// URLs maps a probe (metrics.ProbeLiveness, metrics.ProbeReadiness) to
	// the URL to GET; a 200 answer means healthy.
	URLs     map[string]string
	Client   *http.Client
	Interval time.Duration
	Metrics  *metrics.Metrics
}

// Run probes every Interval until ctx ends.
func (p *Prober) Run(ctx context.Context) {
	wait.UntilWithContext(ctx, p.ProbeOnce, p.Interval)
}

// ProbeOnce probes every URL once and records the results.
func (p *Prober) ProbeOnce(ctx context.Context) {
	for probe, url := range p.URLs {
		err := p.probe(ctx, url)
		up := 1.0
		if err != nil {
			up = 0
			klog.FromContext(ctx).V(2).Info("Scheduler probe failed", "probe", probe, "url", url, "err", err)
		}
		p.Metrics.SchedulerUp.WithLabelValues(probe).Set(up)
	}
}

func (p *Prober) probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, p.Interval)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	return nil
}

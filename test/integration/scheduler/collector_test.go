package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/test/integration/cluster"
)

// TestCollectorDown traces every attempt to a collector that is not there:
// all 1000 pods must still be scheduled, and the lost spans counted. How
// long it takes, compared with tracing off, is measured by make bench.
func TestCollectorDown(t *testing.T) {
	const (
		profile = "collector-down"
		pods    = 1000
	)
	closed, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:%d\nsamplingRatePerMillion: 1000000\n", closed)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startDedicatedScheduler(t, profile, "--tracing-config-file="+config)
	ns := createNamespace(t)
	// Ten nodes of 110 pods each hold the thousand.
	var nodes []nodeSpec
	for i := range 10 {
		nodes = append(nodes, nodeSpec{name: fmt.Sprintf("collector-%d", i), cpu: "100", memory: "100Gi"})
	}
	createNodes(t, nodes...)
	for i := range pods {
		createPod(t, st.MakePod().Namespace(ns).Name(fmt.Sprintf("p-%04d", i)).SchedulerName(profile).Obj())
	}
	if err := cluster.WaitForBound(context.Background(), client, ns, pods, 5*time.Minute); err != nil {
		t.Fatalf("not every pod was bound with the collector down: %v", err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		families, err := scrape(t, s.MetricsURL).Gather()
		if err != nil {
			return false, err
		}
		var lost float64
		for _, f := range families {
			if f.GetName() == "schedscope_trace_spans_dropped_total" || f.GetName() == "schedscope_trace_spans_export_failed_total" {
				lost += f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return lost > 0, nil
	})
	if err != nil {
		t.Errorf("no lost span was counted with the collector down: %v", err)
	}
}

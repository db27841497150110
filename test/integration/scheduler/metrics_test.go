package scheduler

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/testutil"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/test/framework"
)

// TestMetrics schedules two pods and leaves one unschedulable on a
// dedicated scheduler, then checks its /metrics: the counts, and that
// promtool finds no problem in schedscope's metrics of a real scrape.
// (Some upstream metrics of the scrape, such as the delegated
// authentication ones, do not pass promtool's lint; they are not ours.)
func TestMetrics(t *testing.T) {
	const profile = "metrics-test"
	s := startDedicatedScheduler(t, profile)
	ns := createNamespace(t)
	createNodes(t, nodeSpec{name: "metrics-node", cpu: "2", memory: "4Gi"},
		nodeSpec{name: "metrics-tainted", cpu: "2", memory: "4Gi", taints: []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}})
	for _, name := range []string{"a", "b"} {
		pod := createPod(t, st.MakePod().Namespace(ns).Name(name).SchedulerName(profile).Req(cpuMem("100m", "100Mi")).Obj())
		waitForBinding(t, pod)
		waitForRecordOf(t, s, pod.UID, record.ResultScheduled)
	}
	big := createPod(t, st.MakePod().Namespace(ns).Name("big").SchedulerName(profile).Req(cpuMem("3", "100Mi")).Obj())
	waitForRecordOf(t, s, big.UID, record.ResultUnschedulable)

	want := `
# HELP schedscope_attempt_unschedulable_by_plugin_total [ALPHA] Unschedulable attempts by each plugin that rejected at least one node (or the pod, at PreFilter).
# TYPE schedscope_attempt_unschedulable_by_plugin_total counter
schedscope_attempt_unschedulable_by_plugin_total{plugin="NodeResourcesFit",profile="metrics-test"} 1
schedscope_attempt_unschedulable_by_plugin_total{plugin="TaintToleration",profile="metrics-test"} 1
# HELP schedscope_attempts_total [ALPHA] Scheduling attempts by profile and result (scheduled, unschedulable, error).
# TYPE schedscope_attempts_total counter
schedscope_attempts_total{profile="metrics-test",result="scheduled"} 2
schedscope_attempts_total{profile="metrics-test",result="unschedulable"} 1
# HELP schedscope_filter_verdicts_total [ALPHA] Filter verdicts on nodes by plugin and status code: Success for a node the plugin passed, else the code it rejected with.
# TYPE schedscope_filter_verdicts_total counter
schedscope_filter_verdicts_total{code="Success",plugin="NodeName",profile="metrics-test"} 6
schedscope_filter_verdicts_total{code="Success",plugin="NodeResourcesFit",profile="metrics-test"} 2
schedscope_filter_verdicts_total{code="Success",plugin="NodeUnschedulable",profile="metrics-test"} 6
schedscope_filter_verdicts_total{code="Success",plugin="TaintToleration",profile="metrics-test"} 3
schedscope_filter_verdicts_total{code="UnschedulableAndUnresolvable",plugin="NodeResourcesFit",profile="metrics-test"} 1
schedscope_filter_verdicts_total{code="UnschedulableAndUnresolvable",plugin="TaintToleration",profile="metrics-test"} 3
`
	if err := testutil.GatherAndCompare(scrape(t, s.MetricsURL), strings.NewReader(want),
		"schedscope_attempts_total", "schedscope_attempt_unschedulable_by_plugin_total", "schedscope_filter_verdicts_total"); err != nil {
		t.Error(err)
	}

	promtool, err := framework.Binary("promtool")
	if err != nil {
		t.Fatal(err)
	}
	body, err := framework.GetWithToken(s.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	var ours bytes.Buffer
	for _, line := range strings.SplitAfter(string(body), "\n") {
		if strings.HasPrefix(line, "schedscope_") || strings.HasPrefix(line, "# HELP schedscope_") || strings.HasPrefix(line, "# TYPE schedscope_") {
			ours.WriteString(line)
		}
	}
	if !strings.Contains(ours.String(), "schedscope_plugin_duration_seconds_bucket") {
		t.Fatalf("the scrape has no schedscope histogram:\n%s", ours.String())
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = &ours
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

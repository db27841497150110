package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
)

func TestTaintNoSchedule(t *testing.T) {
	ns := createNamespace(t)
	createNodes(t,
		nodeSpec{name: "taint-clean", cpu: "4", memory: "8Gi"},
		nodeSpec{name: "taint-tainted", cpu: "4", memory: "8Gi", taints: []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}}},
	)
	pod := createPod(t, st.MakePod().Namespace(ns).Name("web").SchedulerName(profileDefault).Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj())
	if got := waitForBinding(t, pod); got != "taint-clean" {
		t.Errorf("pod bound to %s, want taint-clean", got)
	}
	rec, _ := waitForRecord(t, pod.UID, record.ResultScheduled)
	if rec.SelectedNode != "taint-clean" {
		t.Errorf("record selected %q, want taint-clean", rec.SelectedNode)
	}
	v := verdictOf(rec, "taint-tainted")
	if v == nil || v.Verdict != record.VerdictRejected || v.Plugin != "TaintToleration" {
		t.Fatalf("verdict of taint-tainted = %+v, want rejected by TaintToleration", v)
	}
	t.Logf("record: %+v", rec)
}

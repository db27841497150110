package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/framework"
)

// TestHints leaves a pod unschedulable for each kind of hint, applies the
// change the hint suggests (to a new pod, since a pod's spec cannot change,
// or to the node) and checks that the real scheduler then binds the pod on
// a node the hint named.
func TestHints(t *testing.T) {
	ctx := context.Background()
	const ns = "hints"
	createNamespace(t, ns)
	t.Cleanup(func() { _ = framework.DeletePods(ctx, cp.Client, ns) })
	for name, policy := range map[string]v1.PreemptionPolicy{"hints-never": v1.PreemptNever, "hints-preempt": v1.PreemptLowerPriority} {
		if _, err := cp.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 1000, PreemptionPolicy: &policy,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cp.Client.SchedulingV1().PriorityClasses().Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	dedicated := v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}

	t.Run("tolerate", func(t *testing.T) {
		t.Cleanup(func() { _ = framework.DeletePods(ctx, cp.Client, ns) })
		createNode(t, "hint-tainted-1", "4", dedicated)
		createNode(t, "hint-tainted-2", "4", dedicated)
		h := waitForHint(t, hintPod(t, ns, "tolerate", "2", nil), v1alpha1.HintTolerate, "TaintToleration")
		if h.Nodes != 2 || h.Taint == nil || h.Taint.Key != "dedicated" || h.Taint.Value != "db" {
			t.Fatalf("hint %+v: want 2 nodes tolerating dedicated=db", h)
		}
		// kubectl schedscope shows the hint, by default and wide, and top
		// counts the rejection.
		for _, args := range [][]string{
			{"explain", "pod/tolerate", "-n", ns},
			{"explain", "pod/tolerate", "-n", ns, "-o", "wide"},
			{"top", "plugins", "-n", ns},
		} {
			code, out := runPlugin(t, cp.Kubeconfig, append(args, "--sidecar-url", sidecar.URL, "--insecure-skip-tls-verify")...)
			want := regexp.QuoteMeta("TaintToleration: 2 nodes would fit if the pod tolerated dedicated=db:NoSchedule (hint-tainted-1, hint-tainted-2)")
			if args[0] == "top" {
				want = `TaintToleration +1 +2\n`
			}
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("kubectl schedscope %s: exit %d, output lacks %q:\n%s", strings.Join(args, " "), code, want, out)
			}
			t.Logf("kubectl schedscope %s\n%s", strings.Join(args, " "), out)
		}
		// kubectl completes the pod through kubectl_complete-schedscope.
		complete := exec.Command(filepath.Join(framework.BinDir(), "kubectl_complete-schedscope"),
			"explain", "-n", ns, "--sidecar-url", sidecar.URL, "--insecure-skip-tls-verify", "pod/tol")
		complete.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig, "PATH="+framework.BinDir()+":"+os.Getenv("PATH"))
		if out, err := complete.Output(); err != nil || string(out) != "pod/tolerate\n:4\n" {
			t.Errorf("kubectl_complete-schedscope explain pod/tol: %v, %q; want pod/tolerate", err, out)
		}
		deletePod(t, ns, "tolerate")
		applied := hintPod(t, ns, "tolerating", "2", func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: h.Taint.Key, Operator: v1.TolerationOpEqual, Value: h.Taint.Value, Effect: h.Taint.Effect}}
		})
		checkBoundOn(t, ns, applied, h.NodeNames)
	})

	t.Run("lower requests", func(t *testing.T) {
		t.Cleanup(func() { _ = framework.DeletePods(ctx, cp.Client, ns) })
		createNode(t, "hint-small", "1500m")
		h := waitForHint(t, hintPod(t, ns, "large", "2", nil), v1alpha1.HintLowerRequests, "NodeResourcesFit")
		if cpu := h.Requests[v1.ResourceCPU]; cpu.Cmp(resource.MustParse("1500m")) != 0 || !slices.Equal(h.NodeNames, []string{"hint-small"}) {
			t.Fatalf("hint %+v: want cpu 1500m on hint-small", h)
		}
		deletePod(t, ns, "large")
		applied := hintPod(t, ns, "smaller", "1", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = h.Requests })
		checkBoundOn(t, ns, applied, h.NodeNames)
	})

	t.Run("add node labels", func(t *testing.T) {
		t.Cleanup(func() { _ = framework.DeletePods(ctx, cp.Client, ns) })
		createNode(t, "hint-plain", "4")
		pod := hintPod(t, ns, "ssd", "1", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })
		h := waitForHint(t, pod, v1alpha1.HintAddNodeLabels, "NodeAffinity")
		if h.Labels["disk"] != "ssd" || !slices.Equal(h.NodeNames, []string{"hint-plain"}) {
			t.Fatalf("hint %+v: want disk=ssd on hint-plain", h)
		}
		updateNode(t, h.NodeNames[0], func(n *v1.Node) {
			for k, v := range h.Labels {
				n.Labels[k] = v
			}
		})
		checkBoundOn(t, ns, pod, h.NodeNames)
	})

	t.Run("uncordon", func(t *testing.T) {
		t.Cleanup(func() { _ = framework.DeletePods(ctx, cp.Client, ns) })
		createNode(t, "hint-cordoned", "4")
		updateNode(t, "hint-cordoned", func(n *v1.Node) { n.Spec.Unschedulable = true })
		pod := hintPod(t, ns, "cordoned", "1", nil)
		h := waitForHint(t, pod, v1alpha1.HintUncordon, "NodeUnschedulable")
		if !slices.Equal(h.NodeNames, []string{"hint-cordoned"}) {
			t.Fatalf("hint %+v: want hint-cordoned", h)
		}
		updateNode(t, h.NodeNames[0], func(n *v1.Node) { n.Spec.Unschedulable = false })
		checkBoundOn(t, ns, pod, h.NodeNames)
	})

	t.Run("preempt", func(t *testing.T) {
		t.Cleanup(func() { _ = framework.DeletePods(ctx, cp.Client, ns) })
		createNode(t, "hint-full", "2")
		hintPod(t, ns, "filler", "2", func(p *v1.Pod) { p.Spec.NodeName = "hint-full" })
		h := waitForHint(t, hintPod(t, ns, "important", "2", func(p *v1.Pod) { p.Spec.PriorityClassName = "hints-never" }),
			v1alpha1.HintPreempt, "NodeResourcesFit")
		if !slices.Equal(h.NodeNames, []string{"hint-full"}) {
			t.Fatalf("hint %+v: want hint-full", h)
		}
		deletePod(t, ns, "important")
		applied := hintPod(t, ns, "preempting", "2", func(p *v1.Pod) { p.Spec.PriorityClassName = "hints-preempt" })
		checkBoundOn(t, ns, applied, h.NodeNames)
	})

	t.Run("no single change", func(t *testing.T) {
		t.Cleanup(func() { _ = framework.DeletePods(ctx, cp.Client, ns) })
		createNode(t, "hint-small-tainted", "1", dedicated)
		e := waitForHints(t, ns, hintPod(t, ns, "stuck", "2", nil))
		want := []v1alpha1.Hint{{Kind: v1alpha1.HintNoSingleChange, Plugins: []string{"NodeResourcesFit", "TaintToleration"},
			Message: "no single change is enough: more than one check fails on 1 node"}}
		if diff := cmp.Diff(want, e.Hints); diff != "" {
			t.Errorf("hints (-want +got):\n%s", diff)
		}
	})

	t.Run("without node rights", func(t *testing.T) {
		t.Cleanup(func() { _ = framework.DeletePods(ctx, cp.Client, ns) })
		createNode(t, "hint-tainted-3", "4", dedicated)
		pod := hintPod(t, ns, "hidden", "2", nil)
		waitForHint(t, pod, v1alpha1.HintTolerate, "TaintToleration")
		reader := serviceAccount(t, ns, "hint-reader", true, false)
		code, body, err := framework.GetAs(fmt.Sprintf("%s%snamespaces/%s/pods/%s/explain", sidecar.URL, v1alpha1.Prefix, ns, pod), reader)
		if err != nil || code != http.StatusOK {
			t.Fatalf("explain as a reader without node rights: %d %v %s", code, err, body)
		}
		var e v1alpha1.Explanation
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		if len(e.Hints) != 1 || e.Hints[0].Nodes != 1 || len(e.Hints[0].NodeNames) != 0 || strings.Contains(string(body), "hint-tainted-3") {
			t.Errorf("hints for a reader without node rights: %+v (want one counting a node, naming none); answer %s", e.Hints, body)
		}
	})
}

// hintPod creates a pod of the schedscope profile requesting cpu, changed
// by mod, and returns its name.
func hintPod(t *testing.T, ns, name, cpu string, mod func(*v1.Pod)) string {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{SchedulerName: profile, TerminationGracePeriodSeconds: new(int64),
			Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	if mod != nil {
		mod(pod)
	}
	if _, err := cp.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// waitForHints waits until the pod's latest attempt is unschedulable and
// explained with hints.
func waitForHints(t *testing.T, ns, pod string) v1alpha1.Explanation {
	t.Helper()
	var e v1alpha1.Explanation
	url := fmt.Sprintf("%s%snamespaces/%s/pods/%s/explain", sidecar.URL, v1alpha1.Prefix, ns, pod)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		code, body, err := framework.GetAs(url, cp.Config.BearerToken)
		if err != nil || code != http.StatusOK {
			return false, nil
		}
		e = v1alpha1.Explanation{}
		if err := json.Unmarshal(body, &e); err != nil {
			return false, err
		}
		return e.Result == "unschedulable" && len(e.Hints) > 0, nil
	})
	if err != nil {
		t.Fatalf("no hints for %s/%s: %v (last: %s, %+v)", ns, pod, err, e.Result, e.Groups)
	}
	t.Logf("hints for %s/%s: %+v", ns, pod, e.Hints)
	return e
}

// waitForHint waits for the hints of pod and returns the first of kind,
// which must answer plugin.
func waitForHint(t *testing.T, pod string, kind v1alpha1.HintKind, plugin string) v1alpha1.Hint {
	t.Helper()
	const ns = "hints"
	e := waitForHints(t, ns, pod)
	for _, h := range e.Hints {
		if h.Kind == kind {
			if !slices.Equal(h.Plugins, []string{plugin}) {
				t.Errorf("%s hint answers %v, want %s", kind, h.Plugins, plugin)
			}
			return h
		}
	}
	t.Fatalf("no %s hint for %s/%s: %+v", kind, ns, pod, e.Hints)
	return v1alpha1.Hint{}
}

func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	if err := cp.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
}

func updateNode(t *testing.T, name string, mod func(*v1.Node)) {
	t.Helper()
	n, err := cp.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	mod(n)
	if _, err := cp.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkBoundOn waits until the pod is bound and checks that its node is one of nodes.
func checkBoundOn(t *testing.T, ns, pod string, nodes []string) {
	t.Helper()
	waitBound(t, ns, pod)
	p, err := cp.Client.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(nodes, p.Spec.NodeName) {
		t.Errorf("pod %s/%s bound on %s, want one of the hint's nodes %v", ns, pod, p.Spec.NodeName, nodes)
	}
}

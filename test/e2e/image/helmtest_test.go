package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/schedscope/schedscope/test/framework"
)

// helmTestOutput is what each container of the chart's `helm test` pod
// must print on a release whose namespace has no pending pod.
var helmTestOutput = map[string][]string{
	"status":  {"Stream:    epoch ", "watching true", "Store:     "},
	"pending": {"No pending pods."},
}

// runHelmTest runs the chart's `helm test` hook as `helm test` does: it
// renders the release with its hooks (set as the chart was applied with),
// applies the hook's account and roles, and runs each container of the
// hook's pod, which must name the sidecar's image (sidecarRendered, the
// image the Deployment's sidecar has), from the sidecar image built here,
// with a token of that account, until it exits. Every container must exit
// 0 with its expected output, which the test logs and writes to its
// artifacts (go test -artifacts) as helm-test-<container>.log. The
// kube-apiserver reaches the sidecar on the host's loopback: the
// APIService's Service becomes an ExternalName of localhost and the
// APIService names the sidecar's port (the test has no cluster network),
// and the kube-apiserver still verifies the sidecar with the APIService's
// caBundle for the Service's name.
func runHelmTest(t *testing.T, cp *framework.ControlPlane, byName map[string]*unstructured.Unstructured, set []string, sidecarRendered, sidecarImage string, sidecarPort int) {
	t.Helper()
	routeAPIService(t, cp, byName["APIService/v1alpha1.schedscope.io"], sidecarPort)

	rendered, err := framework.RenderRelease("schedscope", namespace, nil, set...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.DecodeYAML(rendered)
	if err != nil {
		t.Fatal(err)
	}
	applier, err := cp.NewApplier("schedscope-image-test")
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	for _, o := range objs {
		if o.GetAnnotations()["helm.sh/hook"] != "test" {
			continue
		}
		if o.GetKind() == "Pod" {
			pod = &corev1.Pod{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, pod); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := applier.Apply(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	if pod == nil {
		t.Fatal("the chart renders no helm test pod")
	}

	host := &kubelet{t: t, cp: cp, objs: byName, dir: t.TempDir(), pod: pod.Spec}
	for _, c := range pod.Spec.Containers {
		if c.Image != sidecarRendered {
			t.Errorf("helm test container %s: image %s, want the sidecar's %s", c.Name, c.Image, sidecarRendered)
		}
		name := host.run(c, sidecarImage)
		code, out := waitExit(t, name, 60*time.Second)
		if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "helm-test-"+c.Name+".log"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if code != 0 {
			t.Errorf("helm test pod %s, container %s exited %d:\n%s", pod.Name, c.Name, code, out)
			continue
		}
		wants, ok := helmTestOutput[c.Name]
		if !ok {
			t.Errorf("helm test pod %s has container %s, whose output the test does not know", pod.Name, c.Name)
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("helm test pod %s, container %s: output lacks %q:\n%s", pod.Name, c.Name, want, out)
			}
		}
		t.Logf("helm test pod %s, container %s (%s) exited 0:\n%s", pod.Name, c.Name, strings.Join(append(c.Command, c.Args...), " "), out)
	}
}

// routeAPIService makes the APIService's Service an ExternalName of
// localhost and the APIService name port, then waits until the
// kube-apiserver reports it available.
func routeAPIService(t *testing.T, cp *framework.ControlPlane, apiService *unstructured.Unstructured, port int) {
	t.Helper()
	ctx := t.Context()
	if apiService == nil {
		t.Fatal("the chart renders no APIService")
	}
	client, err := aggregator.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	as, err := client.ApiregistrationV1().APIServices().Get(ctx, apiService.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc := as.Spec.Service
	if err := cp.Client.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().Services(svc.Namespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Appendf(nil, `{"spec":{"service":{"port":%d}}}`, port)
	if _, err := client.ApiregistrationV1().APIServices().Patch(ctx, as.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *apiregistrationv1.APIService
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if last, err = client.ApiregistrationV1().APIServices().Get(ctx, as.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, c := range last.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				return c.Status == apiregistrationv1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("APIService %s never became available: %v; status %+v", as.Name, err, last.Status)
	}
}

// waitExit waits until podman container name exits and returns its exit
// code and output.
func waitExit(t *testing.T, name string, timeout time.Duration) (int, string) {
	t.Helper()
	var state string
	var inspectErr error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		// podman inspect can fail while the container exits ("read
		// /proc/N/cgroup: no such process"): ask again.
		out, err := podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name)
		if inspectErr = err; err != nil {
			return false, nil
		}
		state = strings.TrimSpace(string(out))
		return strings.HasPrefix(state, "exited "), nil
	})
	if err != nil {
		t.Fatalf("container %s did not exit in %v (state %q, last inspect error %v): %v", name, timeout, state, inspectErr, err)
	}
	code, err := strconv.Atoi(strings.TrimPrefix(state, "exited "))
	if err != nil {
		t.Fatalf("container %s: state %q", name, state)
	}
	// Its stdout and stderr, as kubectl logs shows them.
	cmd := exec.Command("podman", "logs", name)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(framework.RepoRoot(), "hack", "podman", "containers.conf"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("podman logs %s: %v: %s", name, err, out)
	}
	return code, string(out)
}

package sidecar

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/sidecar/web/webtest"
	"github.com/schedscope/schedscope/test/framework"
)

// TestPageThroughKubectlProxy opens the page as a user does: kubectl proxy
// with the user's kubeconfig, the kube-apiserver's aggregator, the sidecar
// serving the page under the API's path. In headless Chromium the search
// finds a pod by name and by UID prefix, the result, profile and time
// filters keep the matching pods, a column sorts the pods, and a pod's page shows its matrix
// and hints.
// `kubectl schedscope ui` serves the same and proxies only the API group.
func TestPageThroughKubectlProxy(t *testing.T) {
	registerAPIService(t)
	const ns = "proxied"
	createNamespace(t, ns)
	t.Cleanup(func() { _ = framework.DeletePods(context.Background(), cp.Client, ns) })
	createNode(t, "proxy-big", "8")
	createNode(t, "proxy-tainted", "8", v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule})
	hintPod(t, ns, "web", "1", nil)
	hintPod(t, ns, "ssd", "1", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })
	waitForExplanation(t, ns, "web", "scheduled")
	ssd := waitForHints(t, ns, "ssd")

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for kubectl proxy: %v", err)
	}
	base := "http://" + startServing(t, kubectl, regexp.MustCompile(`Starting to serve on (\S+)`), "proxy", "--port=0", "--kubeconfig", cp.Kubeconfig) + v1alpha1.UIPath

	for _, tt := range []struct {
		name, route string
		want, not   []string
	}{
		{"search by name", "#/?ns=proxied&q=ss", []string{`data-pod="proxied/ssd"`}, []string{`data-pod="proxied/web"`}},
		{"search by UID prefix", "#/?ns=proxied&q=" + ssd.Pod.UID[:8], []string{`data-pod="proxied/ssd"`}, []string{`data-pod="proxied/web"`}},
		{"filter by result", "#/?ns=proxied&result=scheduled", []string{`data-pod="proxied/web"`}, []string{`data-pod="proxied/ssd"`}},
		{"filter by profile and time", "#/?ns=proxied&profile=" + profile + "&since=15m", []string{`data-pod="proxied/web"`, `data-pod="proxied/ssd"`}, nil},
		{"filter by another profile", "#/?ns=proxied&profile=default-scheduler", []string{"No pod matches."}, []string{`data-pod="proxied/`}},
		{"pod page", "#/pods/proxied/ssd", []string{"What would make it fit", "1 node would fit with label disk=ssd (proxy-big)", `data-node="proxy-tainted"`}, nil},
	} {
		dom := webtest.DumpDOM(t, base+tt.route)
		for _, w := range tt.want {
			if !strings.Contains(dom, w) {
				t.Errorf("%s: the page lacks %q", tt.name, w)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(dom, n) {
				t.Errorf("%s: the page shows %q", tt.name, n)
			}
		}
	}
	// Sorting by a column: web before ssd, descending by pod.
	sortedDOM := webtest.DumpDOM(t, base+"#/?ns=proxied&sort=-Pod")
	recent := sortedDOM[strings.Index(sortedDOM, "Recent pods"):]
	if i, j := strings.Index(recent, `data-pod="proxied/web"`), strings.Index(recent, `data-pod="proxied/ssd"`); i < 0 || j < 0 || i > j {
		t.Errorf("sorted by pod, descending: web at %d, ssd at %d; want web first", i, j)
	}
	if row := webtest.Row(t, webtest.DumpDOM(t, base+"#/pods/proxied/ssd"), "proxy-big"); !strings.Contains(row, "NodeAffinity") {
		t.Errorf("the matrix row of proxy-big does not show NodeAffinity:\n%s", row)
	}
	webtest.Screenshot(t, base+"#/?ns=proxied&q=ss", "proxy-search.png")
	webtest.Screenshot(t, base+"#/pods/proxied/ssd", "proxy-pod.png")

	plugin, err := framework.Binary("kubectl-schedscope")
	if err != nil {
		t.Fatal(err)
	}
	ui := "http://" + startServing(t, plugin, regexp.MustCompile(`Serving the page at http://(\S+?)/`), "ui", "--port=0", "--kubeconfig", cp.Kubeconfig)
	for path, want := range map[string]int{v1alpha1.UIPath: http.StatusOK, v1alpha1.Prefix + "namespaces/proxied/pods/ssd/explain": http.StatusOK, "/api/v1/namespaces": http.StatusForbidden} {
		resp, err := http.Get(ui + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("kubectl schedscope ui: GET %s answered %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// startServing starts binary with args until the test ends and returns the
// address it prints on stdout in the first group of re.
func startServing(t *testing.T, binary string, re *regexp.Regexp, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = os.Environ()
	cmd.Stderr = io.Discard
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if m := re.FindStringSubmatch(s.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case addr := <-found:
		return addr
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %v printed no address", binary, args)
		return ""
	}
}

package sidecar

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedscope/schedscope/pkg/sidecar/web/webtest"
)

// TestPodPageInChromium schedules a pod past a tainted node with the real
// scheduler and loads its page from the real sidecar in headless Chromium:
// the matrix must show the tainted node rejected by TaintToleration and
// highlight the chosen node. The browser reaches the sidecar through an
// authenticating proxy on loopback, as a user's would through one in front
// of it, since the page keeps a pasted token only in session storage.
func TestPodPageInChromium(t *testing.T) {
	createNamespace(t, "page")
	createNode(t, "page-big", "8")
	createNode(t, "page-tainted", "8", v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule})
	createPod(t, "page", "web", "1")
	explained := waitForExplanation(t, "page", "web", "scheduled")
	if explained.SelectedNode != "page-big" {
		t.Fatalf("web was scheduled to %q, want page-big", explained.SelectedNode)
	}

	pageURL := authenticatingProxy(t, sidecar.URL, cp.Config.BearerToken) + "/#/pods/page/web"
	dom := webtest.DumpDOM(t, pageURL)
	tainted := webtest.Row(t, dom, "page-tainted")
	for _, want := range []string{"TaintToleration", "untolerated taint", `class="rejected"`} {
		if !strings.Contains(tainted, want) {
			t.Errorf("the row of page-tainted does not show %q:\n%s", want, tainted)
		}
	}
	if chosen := webtest.Row(t, dom, "page-big"); !strings.Contains(chosen, `class="chosen"`) {
		t.Errorf("the chosen node page-big is not highlighted:\n%s", chosen)
	}
	if i, j := strings.Index(dom, `data-node="page-big"`), strings.Index(dom, `data-node="page-tainted"`); j < i {
		t.Errorf("the chosen node is not listed before the rejected one")
	}

	webtest.Screenshot(t, pageURL, "pod-page.png")

	// An unschedulable pod's page says what would make it fit.
	hintPod(t, "page", "ssd", "1", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })
	t.Cleanup(func() { deletePod(t, "page", "ssd") })
	waitForHints(t, "page", "ssd")
	hintsURL := strings.TrimSuffix(pageURL, "web") + "ssd"
	dom = webtest.DumpDOM(t, hintsURL)
	for _, want := range []string{"What would make it fit", `class="hint hint-AddNodeLabels"`, "NodeAffinity", "1 node would fit with label disk=ssd (page-big)"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page of an unschedulable pod does not show %q", want)
		}
	}
	webtest.Screenshot(t, hintsURL, "pod-hints.png")
}

// authenticatingProxy serves target on a loopback http address, adding
// token as the bearer token of every request.
func authenticatingProxy(t *testing.T, target, token string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		// The sidecar's serving certificate is self-signed in tests.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

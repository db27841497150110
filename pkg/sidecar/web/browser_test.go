package web

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/sidecar/api"
	"github.com/schedscope/schedscope/pkg/sidecar/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
)

// chromium finds the browser; the test fails, not skips, without it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found on PATH: the browser test needs headless Chromium (Debian: apt-get install -y chromium)")
	return ""
}

// serve serves the page and the API over a store holding records, on
// 127.0.0.1, with every caller allowed.
func serve(t *testing.T, records ...*record.Attempt) string {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"), store.Retention{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for i, a := range records {
		a.Seq = uint64(i + 1)
	}
	if err := st.Append(context.Background(), store.Cursor{Epoch: "e1", Seq: uint64(len(records))}, store.Records(records...)); err != nil {
		t.Fatal(err)
	}
	anyone := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "viewer"}}, true, nil
	})
	allow := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	apiHandler, err := api.New(api.Config{Store: st, Authenticator: anyone, Authorizer: allow})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(api.Prefix, apiHandler)
	mux.Handle("/", Handler(Config{TraceURL: "http://jaeger.example:16686"}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func chromiumArgs(t *testing.T) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
		// Let the page's fetches finish before the DOM is dumped.
		"--virtual-time-budget=15000", "--window-size=1400,1800",
	}
}

func runChromium(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium(t), append(chromiumArgs(t), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// dumpDOM loads url and returns the rendered DOM once the page says it
// is ready.
func dumpDOM(t *testing.T, url string) string {
	t.Helper()
	dom := string(runChromium(t, "--dump-dom", url))
	if !strings.Contains(dom, `data-ready="true"`) {
		t.Fatalf("the page did not finish rendering:\n%s", dom)
	}
	return dom
}

// row returns the <tr> of node in the DOM.
func row(t *testing.T, dom, node string) string {
	t.Helper()
	re := regexp.MustCompile(`<tr[^>]*data-node="` + regexp.QuoteMeta(node) + `"[^>]*>.*?</tr>`)
	m := re.FindString(dom)
	if m == "" {
		t.Fatalf("no row for node %s in the DOM:\n%s", node, dom)
	}
	return m
}

func podRecord() *record.Attempt {
	return recordtest.MakeAttempt("shop", "web", "uid-web").
		Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").
		Rejected("NodeResourcesFit", "Insufficient cpu", "small-1").
		Passed("big-1", "big-2").
		Scores([]string{"NodeResourcesFit", "ImageLocality"}, map[string][]int64{"big-1": {30, 10}, "big-2": {90, 50}}).
		Scheduled("big-2").TraceID("4bf92f3577b34da6a3ce929d0e0e4736").Obj()
}

func TestPodPageInChromium(t *testing.T) {
	second := podRecord()
	second.Attempt = 2
	base := serve(t,
		recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/4 nodes are available").
			Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").Obj(),
		second)
	url := base + "/#/pods/shop/web"
	dom := dumpDOM(t, url)

	tainted := row(t, dom, "tainted-node")
	for _, want := range []string{"TaintToleration", "untolerated taint", `class="rejected"`, "cell-rejected"} {
		if !strings.Contains(tainted, want) {
			t.Errorf("the row of tainted-node does not show %q:\n%s", want, tainted)
		}
	}
	if chosen := row(t, dom, "big-2"); !strings.Contains(chosen, `class="chosen"`) || !strings.Contains(chosen, ">140<") {
		t.Errorf("the chosen node is not highlighted with its total 140:\n%s", chosen)
	}
	if i, j := strings.Index(dom, `data-node="big-2"`), strings.Index(dom, `data-node="tainted-node"`); i < 0 || j < i {
		t.Errorf("the chosen node is not listed before the rejected one")
	}
	for _, want := range []string{
		`href="http://jaeger.example:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736"`, // trace link
		`>#1<`, `>#2<`, // attempt timeline
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page does not contain %s", want)
		}
	}

	shot := filepath.Join(t.ArtifactDir(), "pod-page.png")
	runChromium(t, "--screenshot="+shot, url)
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}

func TestHomePageInChromium(t *testing.T) {
	now := time.Now()
	base := serve(t, recordtest.MakeAttempt("shop", "web", "uid-web").Finished(now.Add(-2*time.Minute)).
		Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").
		Passed("big-1").Scheduled("big-1").Obj(),
		recordtest.MakeAttempt("batch", "job", "uid-job").Finished(now.Add(-time.Minute)).Unschedulable("0/1 nodes are available").
			Rejected("NodeResourcesFit", "Insufficient memory", "a").Obj())
	dom := dumpDOM(t, base+"/")
	re := regexp.MustCompile(`(?s)Pending pods</h2>.*?</table>`)
	pending := re.FindString(dom)
	if !strings.Contains(pending, "batch/job") || !strings.Contains(pending, "NodeResourcesFit (1)") {
		t.Errorf("the pending table does not list batch/job rejected by NodeResourcesFit:\n%s", pending)
	}
	if strings.Contains(pending, "shop/web") {
		t.Errorf("the pending table lists the scheduled pod shop/web")
	}
	byPlugin := regexp.MustCompile(`(?s)<table class="rejections" data-by="plugin">.*?</table>`).FindString(dom)
	for _, want := range []string{"NodeResourcesFit", "TaintToleration"} {
		if !strings.Contains(byPlugin, want) {
			t.Errorf("the rejecting plugins table does not list %s:\n%s", want, byPlugin)
		}
	}
}

func TestLargeAttemptIsPagedInChromium(t *testing.T) {
	a := recordtest.Large(1, 5000)
	base := serve(t, a)
	dom := dumpDOM(t, base+"/#/pods/load/pod-1")
	if n := strings.Count(dom, "data-node="); n != 50 {
		t.Errorf("the page shows %d node rows, want a page of 50", n)
	}
	if !strings.Contains(dom, "Nodes 1–50 of 5000") {
		t.Errorf("the pager does not say 1–50 of 5000")
	}
	if !strings.Contains(row(t, dom, a.SelectedNode), `class="chosen"`) {
		t.Errorf("the first page does not start with the chosen node %s", a.SelectedNode)
	}
	// Rejected nodes are reachable by their group, a page at a time.
	dom = dumpDOM(t, base+"/#/pods/load/pod-1?group=3&offset=50")
	if !strings.Contains(dom, "Nodes 51–100 of 1000 in the selected group") || !strings.Contains(dom, ">TaintToleration: ") {
		t.Errorf("group page not shown as expected")
	}
}

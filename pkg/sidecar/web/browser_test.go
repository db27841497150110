package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/api"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
	"github.com/schedscope/schedscope/pkg/sidecar/web/webtest"
	"github.com/schedscope/schedscope/pkg/stream"
)

// serve serves the page and the API over a store holding records, on
// 127.0.0.1, with every caller allowed.
func serve(t *testing.T, records ...*record.Attempt) string {
	t.Helper()
	allow := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	return serveWith(t, allow, records...)
}

// podTrace is the trace of every record served.
const podTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// serveWith is serve with the API's authorizer. The records are numbered
// from 1 and each is traced as podTrace.
func serveWith(t *testing.T, authz authorizer.Authorizer, records ...*record.Attempt) string {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	traced := stream.Records(1, records...)
	for i := range traced {
		traced[i].TraceID = podTrace
	}
	if err := st.Append(context.Background(), v1alpha1.Cursor{Epoch: "e1", Seq: uint64(len(records))}, traced); err != nil {
		t.Fatal(err)
	}
	anyone := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "viewer"}}, true, nil
	})
	apiHandler, err := api.New(api.Config{Store: st, Authenticator: anyone, Authorizer: authz})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(v1alpha1.Prefix, apiHandler)
	mux.Handle("/", Handler(Config{TraceURLTemplate: "http://jaeger.example:16686/trace/{traceID}"}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func podRecord() *record.Attempt {
	return recordtest.MakeAttempt("shop", "web", "uid-web").
		Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").
		Rejected("NodeResourcesFit", "Insufficient cpu", "small-1").
		Passed("big-1", "big-2").
		Scores([]string{"NodeResourcesFit", "ImageLocality"}, map[string][]int64{"big-1": {30, 10}, "big-2": {90, 50}}).
		Scheduled("big-2").Obj()
}

func TestPodPageInChromium(t *testing.T) {
	second := podRecord()
	second.Attempt = 2
	second.Details = []record.PluginDetail{
		{Plugin: "NodeResourcesFit", Node: "small-1", Detail: "small-1 has 500m of cpu free"},
		{Plugin: "NUMATopology", Detail: "the pod asks for one NUMA zone"},
	}
	base := serve(t,
		recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/4 nodes are available").
			Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").Obj(),
		second)
	url := base + "/#/pods/shop/web"
	dom := webtest.DumpDOM(t, url)

	tainted := webtest.Row(t, dom, "tainted-node")
	for _, want := range []string{"TaintToleration", "untolerated taint", `class="rejected"`, "cell-rejected"} {
		if !strings.Contains(tainted, want) {
			t.Errorf("the row of tainted-node does not show %q:\n%s", want, tainted)
		}
	}
	if chosen := webtest.Row(t, dom, "big-2"); !strings.Contains(chosen, `class="chosen"`) || !strings.Contains(chosen, ">140<") {
		t.Errorf("the chosen node is not highlighted with its total 140:\n%s", chosen)
	}
	if i, j := strings.Index(dom, `data-node="big-2"`), strings.Index(dom, `data-node="tainted-node"`); i < 0 || j < i {
		t.Errorf("the chosen node is not listed before the rejected one")
	}
	if small := webtest.Row(t, dom, "small-1"); !strings.Contains(small, "NodeResourcesFit: small-1 has 500m of cpu free") {
		t.Errorf("the row of small-1 does not show the plugin's detail:\n%s", small)
	}
	for _, want := range []string{
		"Detail from NUMATopology", "the pod asks for one NUMA zone", // the plugin's detail on the attempt
		`href="http://jaeger.example:16686/trace/` + podTrace + `"`, // trace link
		`>#1<`, `>#2<`, // attempt timeline
		"big-2 beat big-1 by 100: NodeResourcesFit +60, ImageLocality +40", // the chosen node's margin, as kubectl says it
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page does not contain %s", want)
		}
	}

	webtest.Screenshot(t, url, "pod-page.png")
}

// TestPodPageWithoutNodeRightsInChromium: for a caller who may not list
// nodes the page shows the verdict groups and says why there is no node
// matrix; no node but the pod's own is named.
func TestPodPageWithoutNodeRightsInChromium(t *testing.T) {
	allButNodes := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetResource() == "nodes" {
			return authorizer.DecisionNoOpinion, "", nil
		}
		return authorizer.DecisionAllow, "", nil
	})
	dom := webtest.DumpDOM(t, serveWith(t, allButNodes, podRecord())+"/#/pods/shop/web")
	for _, want := range []string{"hidden: you may not list nodes", "Insufficient cpu", "untolerated taint", "big-2"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	for _, node := range []string{"tainted-node", "small-1", "big-1", "data-node="} {
		if strings.Contains(dom, node) {
			t.Errorf("the page shows %q", node)
		}
	}
}

func TestHomePageInChromium(t *testing.T) {
	now := time.Now()
	base := serve(t, recordtest.MakeAttempt("shop", "web", "uid-web").Finished(now.Add(-2*time.Minute)).
		Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").
		Passed("big-1").Scheduled("big-1").Obj(),
		recordtest.MakeAttempt("batch", "job", "uid-job").Finished(now.Add(-time.Minute)).Unschedulable("0/1 nodes are available").
			Rejected("NodeResourcesFit", "Insufficient memory", "a").Obj())
	dom := webtest.DumpDOM(t, base+"/")
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

// TestHomePageFiltersInChromium: the profile filter keeps the pods of one
// profile and offers every profile seen; the time filter keeps the pods
// attempted within the range and sets the rejection tables' window.
func TestHomePageFiltersInChromium(t *testing.T) {
	now := time.Now()
	base := serve(t,
		recordtest.MakeAttempt("shop", "web", "uid-web").Finished(now.Add(-2*time.Minute)).Passed("big-1").Scheduled("big-1").Obj(),
		recordtest.MakeAttempt("batch", "job", "uid-job").Profile("batch-scheduler").Finished(now.Add(-3*time.Hour)).
			Unschedulable("0/1 nodes are available").Rejected("NodeResourcesFit", "Insufficient memory", "a").Obj())
	for _, tt := range []struct {
		name, route string
		want, not   []string
	}{
		{"profile", "/#/?profile=batch-scheduler", []string{`data-pod="batch/job"`, `<option value="batch-scheduler" selected="selected">`, `<option value="default-scheduler">`},
			[]string{`data-pod="shop/web"`}},
		{"last hour", "/#/?since=1h", []string{`data-pod="shop/web"`, "Rejecting plugins, last hour", "No rejections in the last hour."},
			[]string{`data-pod="batch/job"`}},
		{"last 6 hours", "/#/?since=6h", []string{`data-pod="shop/web"`, `data-pod="batch/job"`, "Rejecting plugins, last 6 hours", `data-by="plugin"`}, nil},
		{"no match", "/#/?since=15m&profile=batch-scheduler", []string{"No pending pod matches.", "No pod matches."}, []string{`data-pod=`}},
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
}

func TestLargeAttemptIsPagedInChromium(t *testing.T) {
	a := recordtest.Large(1, 5000)
	base := serve(t, a)
	dom := webtest.DumpDOM(t, base+"/#/pods/load/pod-1")
	if n := strings.Count(dom, "data-node="); n != 50 {
		t.Errorf("the page shows %d node rows, want a page of 50", n)
	}
	if !strings.Contains(dom, "Nodes 1–50 of 5000") {
		t.Errorf("the pager does not say 1–50 of 5000")
	}
	if !strings.Contains(webtest.Row(t, dom, a.SelectedNode), `class="chosen"`) {
		t.Errorf("the first page does not start with the chosen node %s", a.SelectedNode)
	}
	// Rejected nodes are reachable by their group, a page at a time.
	dom = webtest.DumpDOM(t, base+"/#/pods/load/pod-1?group=3&offset=50")
	if !strings.Contains(dom, "Nodes 51–100 of 1000 in the selected group") || !strings.Contains(dom, ">TaintToleration: ") {
		t.Errorf("group page not shown as expected")
	}
}

// TestHomePageForOneNamespaceInChromium: a caller who may list pods in
// namespace batch only is told, on the cluster-wide page, to ask for one
// namespace; for batch it gets batch's pending pods and, not being allowed
// to list nodes, no node table.
func TestHomePageForOneNamespaceInChromium(t *testing.T) {
	batchOnly := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetResource() == "pods" && a.GetNamespace() == "batch" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	base := serveWith(t, batchOnly,
		recordtest.MakeAttempt("shop", "web", "uid-web").Unschedulable("0/1 nodes are available").Rejected("TaintToleration", "taint", "n1").Obj(),
		recordtest.MakeAttempt("batch", "job", "uid-job").Unschedulable("0/1 nodes are available").Rejected("NodeResourcesFit", "Insufficient memory", "n1").Obj())

	dom := webtest.DumpDOM(t, base+"/")
	if !strings.Contains(dom, "cannot list pods at the cluster scope; ask for one namespace") {
		t.Errorf("the cluster-wide page does not say to ask for one namespace")
	}
	dom = webtest.DumpDOM(t, base+"/#/?ns=batch")
	pending := regexp.MustCompile(`(?s)Pending pods in batch</h2>.*?</table>`).FindString(dom)
	if !strings.Contains(pending, "batch/job") {
		t.Errorf("the page of namespace batch does not list batch/job:\n%s", dom)
	}
	if strings.Contains(dom, "shop/web") {
		t.Errorf("the page of namespace batch lists shop/web")
	}
	if !strings.Contains(dom, "cannot list nodes") || strings.Contains(dom, `data-by="node"`) {
		t.Errorf("the page shows the nodes table to a caller who may not list nodes")
	}
}

// TestClustersOnTheHomePageInChromium: with two clusters' records in one
// store (the same pod name and UID in both) served by an API that answers
// for every cluster, the pod tables show a Cluster
// column and link each pod's page in its cluster, and the cluster filter
// keeps one cluster's pods.
func TestClustersOnTheHomePageInChromium(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	for _, cluster := range []string{"east", "west"} {
		st, err := sqlite.Open(ctx, path, store.Options{Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		a := recordtest.MakeAttempt("batch", "job", "uid-job").Finished(time.Now().Add(-time.Minute)).Unschedulable("0/1 nodes are available").
			Rejected("NodeResourcesFit", "Insufficient memory", "n1").Obj()
		if err := st.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 1}, stream.Records(1, a)); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	st, err := sqlite.Open(ctx, path, store.Options{Cluster: "east", AllClusters: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	anyone := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "viewer"}}, true, nil
	})
	allow := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	apiHandler, err := api.New(api.Config{Store: st, Authenticator: anyone, Authorizer: allow, Cluster: "east", AllClusters: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(v1alpha1.Prefix, apiHandler)
	mux.Handle("/", Handler(Config{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	pendingTable := regexp.MustCompile(`(?s)Pending pods</h2>.*?</table>`)
	pending := pendingTable.FindString(webtest.DumpDOM(t, srv.URL+"/"))
	for _, want := range []string{">Cluster", `data-cluster="east"`, `data-cluster="west"`, "#/pods/batch/job?cluster=west"} {
		if !strings.Contains(pending, want) {
			t.Errorf("the pending table of both clusters lacks %s:\n%s", want, pending)
		}
	}
	pending = pendingTable.FindString(webtest.DumpDOM(t, srv.URL+"/#/?cluster=west"))
	if !strings.Contains(pending, `data-cluster="west"`) || strings.Contains(pending, `data-cluster="east"`) {
		t.Errorf("the pending table filtered to west:\n%s", pending)
	}
}

// shadowsAPI answers shop/web's attempts and explain endpoints with an
// attempt that has two shadow runs, and with ?shadow=schedscope-binpack the
// explanation of that shadow's run, as the API's v1alpha1 answers them. It
// returns the handler and the shadow parameters of the explain requests.
func shadowsAPI(t *testing.T) (http.Handler, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var shadows []string
	total := func(n int64) *int64 { return &n }
	explanation := func(profile, chosen string, runs []v1alpha1.ShadowRun) *v1alpha1.Explanation {
		return &v1alpha1.Explanation{
			Pod: v1alpha1.PodRef{Namespace: "shop", Name: "web", UID: "uid-web"}, Profile: profile, Attempt: 1, Seq: 1,
			Result: v1alpha1.ResultScheduled, SelectedNode: chosen, Timing: v1alpha1.Timing{Finished: recordtest.Base},
			Nodes:         v1alpha1.NodeCounts{Total: 2, Evaluated: 2, Feasible: 2},
			FilterPlugins: []string{}, ScorePlugins: []v1alpha1.ScorePlugin{},
			Groups:    []v1alpha1.Group{{Index: 0, Verdict: v1alpha1.VerdictPassed, Nodes: 2, HasChosen: true}},
			Rows:      []v1alpha1.NodeRow{{Node: chosen, Chosen: true, Verdict: v1alpha1.VerdictPassed, Rank: 1, Total: total(240)}},
			TotalRows: 1, Limit: 50, Shadows: runs,
		}
	}
	live := explanation("default-scheduler", "big-2", []v1alpha1.ShadowRun{
		{Shadow: "schedscope-binpack", Outcome: v1alpha1.ShadowOtherNode, SelectedNode: "big-1", LiveNodeRank: 2, LiveNodeScore: total(180),
			ShadowNodeLiveScore: total(40), Plugins: []string{"NodeResourcesFit", "ImageLocality"}},
		{Shadow: "tight", Outcome: v1alpha1.ShadowOnlyLiveFits, Message: "0/2 nodes are available: 2 Insufficient cpu.", Plugins: []string{"NodeResourcesFit"},
			PostFilter: []v1alpha1.ShadowPostFilter{{Plugin: "DefaultPreemption", DryRun: true, Code: "Success", NominatedNode: "big-1",
				Victims: []v1alpha1.PodRef{{Namespace: "shop", Name: "batch-1"}, {Namespace: "shop", Name: "batch-2"}}}}},
	})
	run := explanation("schedscope-binpack", "big-1", nil)
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(v); err != nil {
			t.Error(err)
		}
	}
	mux.HandleFunc("GET "+v1alpha1.Prefix+"namespaces/shop/pods/web/attempts", func(w http.ResponseWriter, r *http.Request) {
		write(w, &v1alpha1.AttemptList{Items: []v1alpha1.AttemptSummary{{Pod: live.Pod, Profile: live.Profile, Attempt: 1, Result: live.Result,
			SelectedNode: live.SelectedNode, Finished: recordtest.Base}}})
	})
	mux.HandleFunc("GET "+v1alpha1.Prefix+"namespaces/shop/pods/web/explain", func(w http.ResponseWriter, r *http.Request) {
		shadow := r.URL.Query().Get(v1alpha1.ParamShadow)
		mu.Lock()
		shadows = append(shadows, shadow)
		mu.Unlock()
		if shadow == "schedscope-binpack" {
			write(w, run)
			return
		}
		write(w, live)
	})
	return mux, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(shadows)
	}
}

// TestShadowsInChromium: the attempt's page lists what each shadow would
// have done, and each run's link loads the shadow's own run into the same
// view, which links back to the live attempt.
func TestShadowsInChromium(t *testing.T) {
	answers, shadowsAsked := shadowsAPI(t)
	mux := http.NewServeMux()
	mux.Handle(v1alpha1.Prefix, answers)
	mux.Handle("/", Handler(Config{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	dom := webtest.DumpDOM(t, srv.URL+"/#/pods/shop/web")
	table := regexp.MustCompile(`(?s)<table class="shadows">.*?</table>`).FindString(dom)
	for _, want := range []string{
		`data-shadow="schedscope-binpack"`, ">another node<", ">big-1 (live profile's score 40)<", ">2nd, score 180<", ">NodeResourcesFit, ImageLocality<",
		`href="#/pods/shop/web?shadow=schedscope-binpack"`,
		`data-shadow="tight"`, ">no node, where the live profile found one", "0/2 nodes are available: 2 Insufficient cpu.",
		">DefaultPreemption: would preempt 2 pods on node big-1<",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the Shadows table lacks %s:\n%s", want, table)
		}
	}

	dom = webtest.DumpDOM(t, srv.URL+"/#/pods/shop/web?shadow=schedscope-binpack")
	for _, want := range []string{"Shadow schedscope-binpack's run of attempt 1 of shop/web", "(profile schedscope-binpack)", `class="live-attempt"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the shadow's run lacks %s", want)
		}
	}
	if chosen := webtest.Row(t, dom, "big-1"); !strings.Contains(chosen, `class="chosen"`) || !strings.Contains(chosen, ">240<") {
		t.Errorf("the shadow's run does not show its chosen node big-1 with 240:\n%s", chosen)
	}
	if strings.Contains(dom, `class="shadows"`) {
		t.Errorf("the shadow's run shows a Shadows table")
	}
	if shadows := shadowsAsked(); !slices.Contains(shadows, "") || !slices.Contains(shadows, "schedscope-binpack") {
		t.Errorf("explain was asked for shadows %q, want the live attempt and schedscope-binpack", shadows)
	}
}

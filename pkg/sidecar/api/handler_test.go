package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
	"github.com/schedscope/schedscope/pkg/stream"
)

// fakeAuthn authenticates "Authorization: Bearer <user>".
var fakeAuthn = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || name == "" {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
})

// fakeAuthz allows what rules lists, as "user verb namespace/name" for
// pods ("*" matches all namespaces or names), "user list nodes" for nodes,
// "user get status.schedscope.io" for the status resource and "user get
// /path" for paths, and records what it was asked.
type fakeAuthz struct {
	rules []string
	mu    sync.Mutex
	asked []string
}

func attrString(a authorizer.Attributes) string {
	if !a.IsResourceRequest() {
		return fmt.Sprintf("%s %s %s", a.GetUser().GetName(), a.GetVerb(), a.GetPath())
	}
	return fmt.Sprintf("%s %s %s/%s/%s", a.GetUser().GetName(), a.GetVerb(), a.GetResource(), a.GetNamespace(), a.GetName())
}

func (f *fakeAuthz) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	f.mu.Lock()
	f.asked = append(f.asked, attrString(a))
	f.mu.Unlock()
	for _, rule := range f.rules {
		parts := strings.SplitN(rule, " ", 3)
		if parts[0] != a.GetUser().GetName() || parts[1] != a.GetVerb() {
			continue
		}
		if !a.IsResourceRequest() {
			if parts[2] == a.GetPath() {
				return authorizer.DecisionAllow, "", nil
			}
			continue
		}
		if a.GetResource() == "nodes" && a.GetAPIGroup() == "" && a.GetNamespace() == "" && parts[2] == "nodes" {
			return authorizer.DecisionAllow, "", nil
		}
		if parts[2] == a.GetResource()+"."+a.GetAPIGroup() && a.GetAPIGroup() != "" {
			return authorizer.DecisionAllow, "", nil
		}
		if a.GetResource() != "pods" || a.GetAPIGroup() != "" {
			continue
		}
		ns, name, _ := strings.Cut(parts[2], "/")
		if (ns == "*" || ns == a.GetNamespace()) && (name == "*" || name == a.GetName()) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "no rule allows it", nil
}

func fixture() []stream.Record {
	t0 := recordtest.Base
	return stream.Records(1,
		recordtest.MakeAttempt("team-a", "web", "uid-web").Finished(t0).Unschedulable("0/3 nodes are available").
			Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").
			Rejected("NodeResourcesFit", "Insufficient cpu", "n1", "n2").Obj(),
		recordtest.MakeAttempt("team-a", "web", "uid-web").Number(2).Finished(t0.Add(time.Second)).
			Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").
			Passed("n1", "n2").Scores([]string{"NodeResourcesFit"}, map[string][]int64{"n1": {80}, "n2": {20}}).Scheduled("n1").Obj(),
		recordtest.MakeAttempt("team-b", "db", "uid-db").Finished(t0.Add(2*time.Second)).Unschedulable("0/3 nodes are available").
			Rejected("NodeAffinity", "node(s) didn't match Pod's node affinity/selector", "n1", "n2", "tainted-node").Obj(),
	)
}

type env struct {
	srv   *httptest.Server
	authz *fakeAuthz
}

// openStore opens a store in a temporary directory holding records.
func openStore(t *testing.T, records ...stream.Record) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if len(records) > 0 {
		if err := st.Append(context.Background(), v1alpha1.Cursor{Epoch: "e1", Seq: records[len(records)-1].Seq}, records); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func newEnv(t *testing.T, rules ...string) *env {
	t.Helper()
	st := openStore(t, fixture()...)
	authz := &fakeAuthz{rules: rules}
	h, err := New(Config{
		Store: st, Authenticator: fakeAuthn, Authorizer: authz,
		Status: func() v1alpha1.FollowerStatus { return v1alpha1.FollowerStatus{Relists: 7} },
		Now:    func() time.Time { return recordtest.Base.Add(time.Minute) },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{srv: srv, authz: authz}
}

func (e *env) get(t *testing.T, user, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func TestPodEndpoints(t *testing.T) {
	e := newEnv(t, "alice get team-a/web", "alice get team-b/ghost", "bob get team-b/*", "alice list nodes", "bob list nodes")
	tests := []struct {
		name     string
		user     string
		path     string
		wantCode int
		wantBody []string
	}{
		{name: "no credentials", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/attempts", wantCode: 401, wantBody: []string{"Unauthorized"}},
		{name: "forbidden", user: "bob", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/attempts", wantCode: 403, wantBody: []string{`user \"bob\" cannot get pods \"web\" in namespace \"team-a\"`}},
		{name: "attempts", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/attempts", wantCode: 200, wantBody: []string{`"attempt":2`, `"attempt":1`, `"selectedNode":"n1"`}},
		{name: "unknown pod", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-b/pods/ghost/attempts", wantCode: 404, wantBody: []string{"no attempts recorded for pod team-b/ghost"}},
		{name: "unknown pod, no permission", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-b/pods/other/explain", wantCode: 403},
		{name: "bad namespace", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/Team_A/pods/web/attempts", wantCode: 400, wantBody: []string{`parameter \"namespace\"`}},
		{name: "bad limit", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/attempts?limit=0", wantCode: 400, wantBody: []string{`parameter \"limit\"`}},
		{name: "unknown parameter", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/attempts?limt=3", wantCode: 400, wantBody: []string{`parameter \"limt\": unknown parameter`}},
		{name: "explain latest", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain", wantCode: 200, wantBody: []string{`"attempt":2`, `"chosen":true`, `"filterPlugins":["TaintToleration"]`}},
		{name: "explain first attempt", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?attempt=1", wantCode: 200, wantBody: []string{`"attempt":1`, `"result":"unschedulable"`}},
		{name: "explain unknown attempt", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?attempt=9", wantCode: 404, wantBody: []string{"no attempt 9"}},
		{name: "why not node", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?node=tainted-node", wantCode: 200, wantBody: []string{"rejected at Filter by TaintToleration"}},
		{name: "why not unknown node", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?node=n9", wantCode: 404, wantBody: []string{`node \"n9\" was not part of attempt 2`}},
		{name: "node with paging", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?node=n1&limit=5", wantCode: 400, wantBody: []string{`parameter \"limit\": cannot be combined with \"node\"`}},
		{name: "group out of range", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?group=9", wantCode: 400, wantBody: []string{`parameter \"group\": attempt 2 has 2 groups`}},
		{name: "page", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?offset=1&limit=1", wantCode: 200, wantBody: []string{`"rows":[{"node":"n2"`, `"totalRows":3`}},
		{name: "by uid", user: "bob", path: "/apis/schedscope.io/v1alpha1/pods/uid-db/explain", wantCode: 200, wantBody: []string{`"name":"db"`}},
		{name: "by uid forbidden, answered as absent", user: "bob", path: "/apis/schedscope.io/v1alpha1/pods/uid-web/attempts", wantCode: 404, wantBody: []string{`no attempts recorded for pod UID \"uid-web\"`}},
		{name: "by unknown uid", user: "bob", path: "/apis/schedscope.io/v1alpha1/pods/uid-nope/attempts", wantCode: 404, wantBody: []string{`no attempts recorded for pod UID \"uid-nope\"`}},
		{name: "bad uid", user: "bob", path: "/apis/schedscope.io/v1alpha1/pods/uid%20x/attempts", wantCode: 400, wantBody: []string{`parameter \"uid\"`}},
		{name: "unknown endpoint", user: "bob", path: "/apis/schedscope.io/v1alpha1/nodes", wantCode: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.get(t, tt.user, tt.path)
			if code != tt.wantCode {
				t.Errorf("status %d, want %d; body %s", code, tt.wantCode, body)
			}
			for _, w := range tt.wantBody {
				if !strings.Contains(string(body), w) {
					t.Errorf("body %s does not contain %s", body, w)
				}
			}
		})
	}
}

// TestForbiddenUIDAnswersAsAbsent: asked by UID for a pod it may not get,
// a caller gets the very answer of a UID no pod has, for attempts and
// explanations alike: neither the pod's name nor its existence shows.
func TestForbiddenUIDAnswersAsAbsent(t *testing.T) {
	e := newEnv(t, "bob get team-b/*")
	for _, endpoint := range []string{"attempts", "explain"} {
		code, forbidden := e.get(t, "bob", "/apis/schedscope.io/v1alpha1/pods/uid-web/"+endpoint)
		absentCode, absent := e.get(t, "bob", "/apis/schedscope.io/v1alpha1/pods/uid-zzz/"+endpoint)
		if code != http.StatusNotFound || absentCode != http.StatusNotFound {
			t.Errorf("%s: forbidden %d, absent %d, want 404 for both", endpoint, code, absentCode)
		}
		if diff := cmp.Diff(string(absent), strings.ReplaceAll(string(forbidden), "uid-web", "uid-zzz")); diff != "" {
			t.Errorf("%s: the forbidden UID's answer differs from the absent one's (-absent +forbidden):\n%s", endpoint, diff)
		}
		for _, leak := range []string{"web", "team-a"} {
			if strings.Contains(strings.ReplaceAll(string(forbidden), "uid-web", ""), leak) {
				t.Errorf("%s: the answer names %q: %s", endpoint, leak, forbidden)
			}
		}
	}
}

// TestNodesNeedListNodes: a caller who may get a pod but not list nodes
// gets its explanation without node names, per-node verdicts or scores:
// the groups' counts and reasons only, and 403 for "why not node X".
func TestNodesNeedListNodes(t *testing.T) {
	e := newEnv(t, "alice get team-a/web", "admin get team-a/web", "admin list nodes")
	code, body := e.get(t, "alice", "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?attempt=1")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var hidden v1alpha1.Explanation
	if err := json.Unmarshal(body, &hidden); err != nil {
		t.Fatal(err)
	}
	if !hidden.NodesHidden || len(hidden.Rows) != 0 || hidden.TotalRows != 0 {
		t.Errorf("nodesHidden %v, %d rows of %d, want hidden and none", hidden.NodesHidden, len(hidden.Rows), hidden.TotalRows)
	}
	for _, node := range []string{"n1", "n2", "tainted-node"} {
		if strings.Contains(string(body), `"`+node+`"`) {
			t.Errorf("the explanation names node %s: %s", node, body)
		}
	}
	wantGroups := []v1alpha1.Group{
		{Index: 0, Verdict: "rejected", Plugin: "NodeResourcesFit", Reasons: []string{"Insufficient cpu"}, Nodes: 2},
		{Index: 1, Verdict: "rejected", Plugin: "TaintToleration", Reasons: []string{"node(s) had untolerated taint {dedicated: infra}"}, Nodes: 1},
	}
	if diff := cmp.Diff(wantGroups, hidden.Groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}

	code, body = e.get(t, "admin", "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?attempt=1")
	var shown v1alpha1.Explanation
	if err := json.Unmarshal(body, &shown); err != nil || code != http.StatusOK {
		t.Fatalf("status %d %v: %s", code, err, body)
	}
	if shown.NodesHidden || shown.TotalRows != 3 {
		t.Errorf("with list nodes: nodesHidden %v, %d total rows, want 3 shown", shown.NodesHidden, shown.TotalRows)
	}
	if diff := cmp.Diff(wantGroups, shown.Groups); diff != "" {
		t.Errorf("groups differ from the hidden explanation's (-hidden +shown):\n%s", diff)
	}

	code, body = e.get(t, "alice", "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain?node=n1")
	if code != http.StatusForbidden || !strings.Contains(string(body), `cannot list nodes`) {
		t.Errorf("why not node without list nodes: %d %s, want 403 naming list nodes", code, body)
	}
}

func TestPodAccessIsAuthorizedAsGetPod(t *testing.T) {
	e := newEnv(t, "alice get team-a/web")
	if code, body := e.get(t, "alice", "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/explain"); code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	if diff := cmp.Diff([]string{"alice get pods/team-a/web", "alice list nodes//"}, e.authz.asked); diff != "" {
		t.Errorf("authorization checks (-want +got):\n%s", diff)
	}
}

// TestAggregatesAuthorizeOnce: a pod list is authorized by one decision,
// list pods at the cluster scope or in the path's namespace, however many
// namespaces the store holds; a caller without cluster-wide rights is
// refused and told to ask for one namespace.
func TestAggregatesAuthorizeOnce(t *testing.T) {
	e := newEnv(t, "admin list */", "alice list team-a/", "admin get status.schedscope.io")
	tests := []struct {
		name     string
		user     string
		path     string
		wantCode int
		want     []string
		wantBody string
	}{
		{name: "pending, cluster-wide", user: "admin", path: "/apis/schedscope.io/v1alpha1/pending", wantCode: 200, want: []string{"team-b/db"}},
		{name: "pods, cluster-wide", user: "admin", path: "/apis/schedscope.io/v1alpha1/pods", wantCode: 200, want: []string{"team-b/db", "team-a/web"}},
		{name: "pods, cluster-wide, not allowed", user: "alice", path: "/apis/schedscope.io/v1alpha1/pods", wantCode: 403,
			wantBody: `user \"alice\" cannot list pods at the cluster scope; ask for one namespace: /apis/schedscope.io/v1alpha1/namespaces/{namespace}/pods`},
		{name: "pending, no rights", user: "carol", path: "/apis/schedscope.io/v1alpha1/pending", wantCode: 403, wantBody: "namespaces/{namespace}/pending"},
		{name: "pending, anonymous", path: "/apis/schedscope.io/v1alpha1/pending", wantCode: 401},
		{name: "pending of one namespace", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pending", wantCode: 200},
		{name: "pods of one namespace", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods", wantCode: 200, want: []string{"team-a/web"}},
		{name: "pods of one namespace, admin", user: "admin", path: "/apis/schedscope.io/v1alpha1/namespaces/team-b/pods", wantCode: 200, want: []string{"team-b/db"}},
		{name: "pending of a namespace not allowed", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-b/pending", wantCode: 403, wantBody: `user \"alice\" cannot list pods in namespace \"team-b\"`},
		{name: "pending of a bad namespace", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/Team_B/pending", wantCode: 400},
		{name: "pending, bad limit", user: "admin", path: "/apis/schedscope.io/v1alpha1/pending?limit=x", wantCode: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := len(e.authz.asked)
			code, body := e.get(t, tt.user, tt.path)
			if code != tt.wantCode {
				t.Fatalf("status %d, want %d; body %s", code, tt.wantCode, body)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body %s does not contain %s", body, tt.wantBody)
			}
			if n := len(e.authz.asked) - asked; tt.user != "" && tt.wantCode != 400 && n != 1 {
				t.Errorf("%d authorization checks, want 1: %v", n, e.authz.asked[asked:])
			}
			if code != 200 {
				return
			}
			var list v1alpha1.PodList
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range list.Items {
				got = append(got, p.Pod.Namespace+"/"+p.Pod.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRejectionsEndpoint(t *testing.T) {
	e := newEnv(t, "admin list */", "alice list team-b/", "alice list nodes", "bob list team-b/")
	tests := []struct {
		name     string
		user     string
		path     string
		wantCode int
		want     []v1alpha1.RejectionCount
		wantBody string
	}{
		{
			name: "by plugin", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections?by=plugin&since=1h", wantCode: 200,
			want: []v1alpha1.RejectionCount{{Key: "NodeAffinity", Attempts: 1, Nodes: 3}, {Key: "NodeResourcesFit", Attempts: 1, Nodes: 2}, {Key: "TaintToleration", Attempts: 2, Nodes: 2}},
		},
		{
			name: "by node, one namespace", user: "alice", path: "/apis/schedscope.io/v1alpha1/namespaces/team-b/rejections?by=node&since=2026-01-02T03:00:00Z&limit=1", wantCode: 200,
			want: []v1alpha1.RejectionCount{{Key: "n1", Attempts: 1, Nodes: 1, Plugins: map[string]int64{"NodeAffinity": 1}}},
		},
		{
			name: "window excludes", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections?by=plugin&since=10s", wantCode: 200,
			want: []v1alpha1.RejectionCount{},
		},
		{
			name: "series", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections?by=plugin&since=2026-01-02T03:04:04Z&until=2026-01-02T03:04:08Z&step=2s&limit=1", wantCode: 200,
			want: []v1alpha1.RejectionCount{{Key: "NodeAffinity", Attempts: 1, Nodes: 3, Series: []v1alpha1.RejectionBucket{
				{Start: recordtest.Base.Add(-time.Second)},
				{Start: recordtest.Base.Add(time.Second), Attempts: 1, Nodes: 3},
			}}},
		},
		{name: "too many buckets", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections?by=plugin&since=2h&step=1s", wantCode: 400, wantBody: `parameter \"step\": makes 7200 buckets`},
		{name: "bad step", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections?by=plugin&step=0s", wantCode: 400, wantBody: `parameter \"step\"`},
		{name: "missing by", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections", wantCode: 400, wantBody: `parameter \"by\": required`},
		{name: "bad by", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections?by=pod", wantCode: 400, wantBody: `parameter \"by\"`},
		{name: "bad since", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections?by=node&since=yesterday", wantCode: 400, wantBody: `parameter \"since\"`},
		{name: "window over the longest", user: "admin", path: "/apis/schedscope.io/v1alpha1/namespaces/team-b/rejections?by=plugin&since=8760h", wantCode: 422,
			wantBody: `parameter \"since\": the window of 8760h0m0s is longer than 168h0m0s, the longest the API counts rejections over: narrow it with \"since\" and \"until\"`},
		{name: "window of the longest", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections?by=plugin&since=2025-12-26T03:05:05Z", wantCode: 200,
			want: []v1alpha1.RejectionCount{{Key: "NodeAffinity", Attempts: 1, Nodes: 3}, {Key: "NodeResourcesFit", Attempts: 1, Nodes: 2}, {Key: "TaintToleration", Attempts: 2, Nodes: 2}}},
		{name: "since after until", user: "admin", path: "/apis/schedscope.io/v1alpha1/rejections?by=node&since=1m&until=2h", wantCode: 400, wantBody: `parameter \"since\": must be before \"until\"`},
		{name: "no credentials", path: "/apis/schedscope.io/v1alpha1/rejections?by=node", wantCode: 401},
		{name: "cluster-wide needs list pods there", user: "bob", path: "/apis/schedscope.io/v1alpha1/rejections?by=plugin", wantCode: 403, wantBody: "namespaces/{namespace}/rejections"},
		{name: "by node needs list nodes", user: "bob", path: "/apis/schedscope.io/v1alpha1/rejections?by=node", wantCode: 403, wantBody: `user \"bob\" cannot list nodes at the cluster scope`},
		{name: "by plugin does not", user: "bob", path: "/apis/schedscope.io/v1alpha1/namespaces/team-b/rejections?by=plugin&since=2026-01-02T03:00:00Z", wantCode: 200,
			want: []v1alpha1.RejectionCount{{Key: "NodeAffinity", Attempts: 1, Nodes: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.get(t, tt.user, tt.path)
			if code != tt.wantCode {
				t.Fatalf("status %d, want %d; body %s", code, tt.wantCode, body)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body %s does not contain %s", body, tt.wantBody)
			}
			if code != 200 {
				return
			}
			var list v1alpha1.RejectionList
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, list.Items); diff != "" {
				t.Errorf("rejections (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusEndpoint: the status is authorized on the API group's status
// resource, as on the aggregated path; a path permission is not enough.
func TestStatusEndpoint(t *testing.T) {
	e := newEnv(t, "admin get status.schedscope.io", "alice get /apis/schedscope.io/v1alpha1/status")
	if code, _ := e.get(t, "alice", "/apis/schedscope.io/v1alpha1/status"); code != 403 {
		t.Errorf("status %d for a caller with a path permission only, want 403", code)
	}
	code, body := e.get(t, "admin", "/apis/schedscope.io/v1alpha1/status")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	for _, w := range []string{`"relists":7`, `"attempts":3`} {
		if !strings.Contains(string(body), w) {
			t.Errorf("body %s does not contain %s", body, w)
		}
	}
}

func TestAuthorizerFailureIsNotAnEmptyAnswer(t *testing.T) {
	st := openStore(t)
	broken := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("connection refused")
	})
	h, err := New(Config{Store: st, Authenticator: fakeAuthn, Authorizer: broken})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	e := &env{srv: srv}
	for _, path := range []string{"/apis/schedscope.io/v1alpha1/pending", "/apis/schedscope.io/v1alpha1/namespaces/a/pods/b/explain", "/apis/schedscope.io/v1alpha1/rejections?by=plugin"} {
		if code, body := e.get(t, "alice", path); code != http.StatusInternalServerError {
			t.Errorf("%s: status %d, want 500 when the authorizer fails; body %s", path, code, body)
		}
	}
}

func TestPendingLeavesOutPodsNoLongerWaiting(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := recordtest.Base
	as := stream.Records(1,
		recordtest.MakeAttempt("a", "deleted", "uid-1").Finished(t0).Unschedulable("no").Obj(),
		recordtest.MakeAttempt("a", "waiting", "uid-2").Finished(t0.Add(time.Second)).Unschedulable("no").Obj(),
	)
	if err := st.Append(context.Background(), v1alpha1.Cursor{Epoch: "e", Seq: 2}, as); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{
		Store: st, Authenticator: fakeAuthn, Authorizer: &fakeAuthz{rules: []string{"alice list */"}},
		StillPending: func(p v1alpha1.PodStatus) bool { return p.Pod.UID != "uid-1" },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	e := &env{srv: srv}
	for path, want := range map[string][]string{
		"/apis/schedscope.io/v1alpha1/pending":         {"a/waiting"},
		"/apis/schedscope.io/v1alpha1/pending?limit=1": {"a/waiting"},
		"/apis/schedscope.io/v1alpha1/pods":            {"a/waiting", "a/deleted"},
	} {
		code, body := e.get(t, "alice", path)
		if code != 200 {
			t.Fatalf("%s: status %d: %s", path, code, body)
		}
		var list v1alpha1.PodList
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range list.Items {
			got = append(got, p.Pod.Namespace+"/"+p.Pod.Name)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
	}
}

// TestAnswersAreNotSniffed checks that answers, errors included, tell
// browsers not to guess their type.
func TestAnswersAreNotSniffed(t *testing.T) {
	e := newEnv(t, "alice get team-a/*")
	for _, path := range []string{v1alpha1.Prefix + "namespaces/team-a/pods/web/explain", v1alpha1.Prefix + "namespaces/team-a/pods/nope/explain", v1alpha1.Prefix + "namespaces/team-b/pods/web/explain"} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s (%d): X-Content-Type-Options %q, want nosniff", path, resp.StatusCode, got)
		}
	}
}

// blockingStore holds every Pods call until release is closed, telling
// entered (buffered) of each.
type blockingStore struct {
	store.Reader
	entered chan struct{}
	release chan struct{}
}

func (s *blockingStore) Pods(ctx context.Context, opts store.PodListOptions) ([]v1alpha1.PodStatus, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Reader.Pods(ctx, opts)
}

// TestInFlightPerUser: a user with MaxInFlightPerUser requests in flight
// gets 429 with Retry-After for the next; another user is served.
func TestInFlightPerUser(t *testing.T) {
	blocking := &blockingStore{Reader: openStore(t, fixture()...), entered: make(chan struct{}, 10), release: make(chan struct{})}
	h, err := New(Config{Store: blocking, Authenticator: fakeAuthn, Authorizer: &fakeAuthz{rules: []string{"alice list */", "bob get team-a/web"}}, MaxInFlightPerUser: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	e := &env{srv: srv}

	codes := make(chan int, 2)
	for range 2 {
		go func() {
			code, _ := e.get(t, "alice", "/apis/schedscope.io/v1alpha1/pending")
			codes <- code
		}()
		<-blocking.entered
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/apis/schedscope.io/v1alpha1/pods", nil)
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `user \"alice\" has 2 requests in flight`) {
		t.Errorf("third request of alice: %d Retry-After %q %s, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if code, body := e.get(t, "bob", "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods/web/attempts"); code != http.StatusOK {
		t.Errorf("bob while alice is at her limit: %d %s, want 200", code, body)
	}
	close(blocking.release)
	for range 2 {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a held request of alice ended %d, want 200", code)
		}
	}
	if code, body := e.get(t, "alice", "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods"); code != http.StatusOK {
		t.Errorf("alice after her requests ended: %d %s, want 200", code, body)
	}
}

// TestInFlightTotal: with MaxInFlight requests of several users in flight,
// the next user's request is answered 429 with Retry-After, naming the
// limit; once one ends, the next is served.
func TestInFlightTotal(t *testing.T) {
	blocking := &blockingStore{Reader: openStore(t, fixture()...), entered: make(chan struct{}, 10), release: make(chan struct{})}
	h, err := New(Config{Store: blocking, Authenticator: fakeAuthn, Authorizer: &fakeAuthz{rules: []string{"alice list */", "bob list */", "carol list */"}}, MaxInFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	e := &env{srv: srv}

	codes := make(chan int, 2)
	for _, user := range []string{"alice", "bob"} {
		go func() {
			code, _ := e.get(t, user, "/apis/schedscope.io/v1alpha1/pods")
			codes <- code
		}()
		<-blocking.entered
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/apis/schedscope.io/v1alpha1/pods", nil)
	req.Header.Set("Authorization", "Bearer carol")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "the API has 2 requests in flight, the most it serves at once for all users together") {
		t.Errorf("carol beside 2 requests in flight: %d Retry-After %q %s, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	close(blocking.release)
	for range 2 {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a held request ended %d, want 200", code)
		}
	}
	if code, body := e.get(t, "carol", "/apis/schedscope.io/v1alpha1/namespaces/team-a/pods"); code != http.StatusOK {
		t.Errorf("carol after the requests ended: %d %s, want 200", code, body)
	}
}

// TestQueryTimeout: a store query that runs past QueryTimeout is answered
// 503, naming the timeout and how to narrow the query.
func TestQueryTimeout(t *testing.T) {
	h, err := New(Config{Store: openStore(t, fixture()...), Authenticator: fakeAuthn, Authorizer: &fakeAuthz{rules: []string{"alice list */"}}, QueryTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, body := (&env{srv: srv}).get(t, "alice", "/apis/schedscope.io/v1alpha1/pods")
	want := `the query ran past the API's query timeout (1ns): narrow it: a shorter window (since, until), one namespace (/apis/schedscope.io/v1alpha1/namespaces/{namespace}/...), one cluster (cluster) or a smaller limit`
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), want) {
		t.Errorf("a query past the timeout: %d %s, want 503 with %s", code, body, want)
	}
}

// TestLimitsAreValidated: a negative limit is refused, naming it.
func TestLimitsAreValidated(t *testing.T) {
	st := openStore(t)
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxInFlightPerUser: -1}, "at most -1 requests in flight per user"},
		{Config{MaxInFlight: -1}, "at most -1 requests in flight: want at least 1"},
		{Config{QueryTimeout: -time.Second}, "query timeout -1s: want a positive duration"},
		{Config{MaxRejectionsWindow: -time.Hour}, "longest rejections window -1h0m0s: want a positive duration"},
	} {
		tt.cfg.Store, tt.cfg.Authenticator, tt.cfg.Authorizer = st, fakeAuthn, &fakeAuthz{}
		if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", tt.cfg, err, tt.want)
		}
	}
}

// writeSizes is a ResponseWriter that keeps the size of every write.
type writeSizes struct {
	httptest.ResponseRecorder
	sizes []int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.ResponseRecorder.Write(p)
}

// TestLongAnswersAreStreamed checks that a long answer reaches the
// connection in pieces as it is encoded, never as one write of the whole.
func TestLongAnswersAreStreamed(t *testing.T) {
	const pods = 3000
	as := make([]*record.Attempt, pods)
	for i := range as {
		as[i] = recordtest.MakeAttempt("team-a", fmt.Sprint("pod-", i), fmt.Sprint("uid-", i)).
			Finished(recordtest.Base.Add(time.Duration(i) * time.Millisecond)).Unschedulable("0/3 nodes are available").Obj()
	}
	h, err := New(Config{Store: openStore(t, stream.Records(1, as...)...), Authenticator: fakeAuthn, Authorizer: &fakeAuthz{rules: []string{"alice list */"}}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, v1alpha1.Prefix+fmt.Sprintf("pods?limit=%d", pods), nil)
	req.Header.Set("Authorization", "Bearer alice")
	w := &writeSizes{ResponseRecorder: *httptest.NewRecorder()}
	h.ServeHTTP(w, req)
	var list v1alpha1.PodList
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != http.StatusOK || len(list.Items) != pods {
		t.Fatalf("status %d, %d pods, %v; want 200 with %d pods", w.Code, len(list.Items), err, pods)
	}
	largest := 0
	for _, n := range w.sizes {
		largest = max(largest, n)
	}
	if total := w.Body.Len(); len(w.sizes) < 4 || largest > total/4 {
		t.Errorf("an answer of %d bytes was written in %d writes, the largest %d bytes: want it in pieces of at most a quarter", total, len(w.sizes), largest)
	}
}

// TestClusters: with two clusters' records in one store, the list
// endpoints keep one cluster's when asked (cluster=), every item names its
// cluster, explain answers for the pod's cluster, the pending list checks
// only the sidecar's own cluster's pods, and a bad cluster name is a 400
// naming the parameter.
func TestClusters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	t0 := recordtest.Base
	writeTwoClusters(t, path)
	st, err := sqlite.Open(ctx, path, store.Options{Cluster: "east", AllClusters: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := New(Config{
		Store: st, Authenticator: fakeAuthn, Authorizer: &fakeAuthz{rules: []string{"alice list */", "alice get a/web", "alice list nodes"}},
		Now:     func() time.Time { return t0.Add(time.Minute) },
		Cluster: "east", AllClusters: true,
		// east's pod is gone from east; west's cannot be checked here.
		StillPending: func(v1alpha1.PodStatus) bool { return false },
		Hints:        func(*record.Attempt, bool) []v1alpha1.Hint { return []v1alpha1.Hint{{Kind: v1alpha1.HintUncordon}} },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	(&env{srv: srv}).expect(t, "alice", []answerWant{
		{path: "pods", wantCode: 200, want: []string{`"cluster":"east"`, `"cluster":"west"`}},
		{path: "pods?cluster=west", wantCode: 200, want: []string{`"cluster":"west"`}, notWant: []string{`"east"`}},
		{path: "pending", wantCode: 200, want: []string{`"cluster":"west"`}, notWant: []string{`"east"`}},
		{path: "namespaces/a/pods/web/attempts?cluster=east", wantCode: 200, want: []string{`"cluster":"east"`}, notWant: []string{`"west"`}},
		{path: "namespaces/a/pods/web/explain", wantCode: 200, want: []string{`"cluster":"west"`}, notWant: []string{`"hints"`}},
		{path: "namespaces/a/pods/web/explain?cluster=east", wantCode: 200, want: []string{`"cluster":"east"`, `"hints"`}},
		{path: "namespaces/a/pods/web/explain?cluster=north", wantCode: 404, want: []string{`pod a/web in cluster \"north\"`}},
		{path: "rejections?by=plugin&since=2h&cluster=west", wantCode: 200, want: []string{`"attempts":1`}},
		{path: "rejections?by=plugin&since=2h", wantCode: 200, want: []string{`"attempts":2`}},
		{path: "pods?cluster=West_1", wantCode: 400, want: []string{`parameter \"cluster\"`, "DNS-1123 label"}},
		{path: "pending?cluster=", wantCode: 400, want: []string{`parameter \"cluster\": empty`}},
	})
}

// TestClustersServedByDefault: with two clusters' records in one store,
// an API not told to serve every cluster answers with its own cluster's
// records only, and a request naming the other cluster is a 404 saying
// which cluster it serves.
func TestClustersServedByDefault(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	writeTwoClusters(t, path)
	st, err := sqlite.Open(ctx, path, store.Options{Cluster: "east"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := New(Config{
		Store: st, Authenticator: fakeAuthn, Authorizer: &fakeAuthz{rules: []string{"alice list */", "alice get a/web", "alice list nodes", "alice get status.schedscope.io"}},
		Now:     func() time.Time { return recordtest.Base.Add(time.Minute) },
		Cluster: "east",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	notServed := `cluster \"west\" is not served here: this API answers for cluster \"east\" only`
	(&env{srv: srv}).expect(t, "alice", []answerWant{
		{path: "pods", wantCode: 200, want: []string{`"cluster":"east"`}, notWant: []string{`"west"`}},
		{path: "pods?cluster=west", wantCode: 404, want: []string{notServed}},
		{path: "pods?cluster=east", wantCode: 200, want: []string{`"cluster":"east"`}, notWant: []string{`"west"`}},
		{path: "namespaces/a/pods/web/explain", wantCode: 200, want: []string{`"cluster":"east"`}, notWant: []string{`"west"`}},
		{path: "namespaces/a/pods/web/explain?cluster=west", wantCode: 404, want: []string{notServed}},
		{path: "namespaces/a/pods/web/attempts", wantCode: 200, want: []string{`"cluster":"east"`}, notWant: []string{`"west"`}},
		{path: "rejections?by=plugin&since=2h", wantCode: 200, want: []string{`"attempts":1`}},
		{path: "rejections?by=plugin&since=2h&cluster=west", wantCode: 404, want: []string{notServed}},
		{path: "status", wantCode: 200, want: []string{`"cluster":"east"`}, notWant: []string{`"west"`}},
	})
}

// answerWant is a request of the API and what its answer must (not) hold.
type answerWant struct {
	path     string
	wantCode int
	want     []string
	notWant  []string
}

// expect asks each path of the API as user and checks its answer.
func (e *env) expect(t *testing.T, user string, wants []answerWant) {
	t.Helper()
	for _, tt := range wants {
		code, body := e.get(t, user, "/apis/schedscope.io/v1alpha1/"+tt.path)
		if code != tt.wantCode {
			t.Errorf("%s: status %d, want %d: %s", tt.path, code, tt.wantCode, body)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s: answer lacks %s: %s", tt.path, w, body)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(string(body), w) {
				t.Errorf("%s: answer holds %s: %s", tt.path, w, body)
			}
		}
	}
}

// writeTwoClusters stores in the SQLite database path an unschedulable
// attempt of pod a/web in cluster east and one in west, with the same UID
// and sequence, west's a second later.
func writeTwoClusters(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	t0 := recordtest.Base
	for i, cluster := range []string{"east", "west"} {
		st, err := sqlite.Open(ctx, path, store.Options{Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		// The same UID and sequence in both clusters.
		a := recordtest.MakeAttempt("a", "web", "uid-1").Finished(t0.Add(time.Duration(i)*time.Second)).
			Unschedulable("0/1 nodes are available").Rejected("TaintToleration", "taint", "n1").Obj()
		if err := st.Append(ctx, v1alpha1.Cursor{Epoch: "e1", Seq: 1}, stream.Records(1, a)); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
}

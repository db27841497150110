package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store/storetest"
	"github.com/schedscope/schedscope/pkg/stream"
)

// newShadowEnv serves storetest.ShadowFixture, whose live profile
// default-scheduler has the shadows binpack and strict. The cluster has
// pod a/shadowed, which names binpack, and a/plain, which names
// default-scheduler; neither has attempts.
func newShadowEnv(t *testing.T, rules ...string) *env {
	t.Helper()
	st := openStore(t, stream.Records(1, storetest.ShadowFixture()...)...)
	authz := &fakeAuthz{rules: rules}
	h, err := New(Config{
		Store: st, Authenticator: fakeAuthn, Authorizer: authz,
		Now: func() time.Time { return recordtest.Base.Add(time.Minute) },
		SchedulerName: func(namespace, name string) (string, bool) {
			pods := map[string]string{"a/shadowed": "binpack", "a/plain": "default-scheduler"}
			n, ok := pods[namespace+"/"+name]
			return n, ok
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{srv: srv, authz: authz}
}

func TestShadowsEndpoint(t *testing.T) {
	e := newShadowEnv(t, "admin list */", "bob list a/")
	since := recordtest.Base.Add(time.Minute - time.Hour)
	tests := []struct {
		name     string
		user     string
		path     string
		wantCode int
		want     v1alpha1.ShadowSummary
		wantBody string
	}{
		{
			name: "every namespace", user: "admin", path: "shadows/binpack", wantCode: 200,
			want: v1alpha1.ShadowSummary{Shadow: "binpack", Since: since, Compared: 4, OtherNode: 1, OnlyLiveFits: 1, OnlyShadowFits: 2,
				TopPlugins: []v1alpha1.PluginCount{{Plugin: "TaintToleration", Count: 2}, {Plugin: "NodeAffinity", Count: 1}, {Plugin: "NodeResourcesFit", Count: 1}}},
		},
		{
			name: "not compared", user: "admin", path: "shadows/strict?since=2026-01-02T03:04:06Z&until=2026-01-02T03:04:09Z", wantCode: 200,
			want: v1alpha1.ShadowSummary{Shadow: "strict", Since: recordtest.Base.Add(time.Second), Until: recordtest.Base.Add(4 * time.Second),
				Compared: 1, Neither: 1, NotCompared: 2,
				NotComparedReasons: []v1alpha1.ReasonCount{{Reason: record.NotComparedSnapshotChanged, Count: 1}, {Reason: record.NotComparedShadowError, Count: 1}}},
		},
		{
			name: "one namespace", user: "bob", path: "namespaces/a/shadows/binpack", wantCode: 200,
			want: v1alpha1.ShadowSummary{Shadow: "binpack", Since: since, Compared: 3, OtherNode: 1, OnlyShadowFits: 2,
				TopPlugins: []v1alpha1.PluginCount{{Plugin: "TaintToleration", Count: 2}, {Plugin: "NodeResourcesFit", Count: 1}}},
		},
		{name: "unknown shadow", user: "admin", path: "shadows/nope", wantCode: 200, want: v1alpha1.ShadowSummary{Shadow: "nope", Since: since}},
		{name: "a cluster the API does not serve", user: "admin", path: "shadows/binpack?cluster=east", wantCode: 404, wantBody: `cluster \"east\" is not served here`},
		{name: "a namespace the user may not list pods in", user: "bob", path: "namespaces/b/shadows/binpack", wantCode: 403,
			wantBody: `user \"bob\" cannot list pods in namespace \"b\"`},
		{name: "cluster-wide needs list pods there", user: "bob", path: "shadows/binpack", wantCode: 403, wantBody: "namespaces/{namespace}/shadows/binpack"},
		{name: "no credentials", path: "shadows/binpack", wantCode: 401},
		{name: "window over the longest", user: "admin", path: "shadows/binpack?since=200h", wantCode: 422,
			wantBody: `parameter \"since\": the window of 200h0m0s is longer than 168h0m0s, the longest the API counts shadow runs over: narrow it with \"since\" and \"until\"`},
		{name: "since after until", user: "admin", path: "shadows/binpack?since=1m&until=2h", wantCode: 400, wantBody: `parameter \"since\": must be before \"until\"`},
		{name: "bad until", user: "admin", path: "shadows/binpack?until=tomorrow", wantCode: 400, wantBody: `parameter \"until\"`},
		{name: "bad cluster", user: "admin", path: "shadows/binpack?cluster=East_1", wantCode: 400, wantBody: `parameter \"cluster\"`},
		{name: "unknown parameter", user: "admin", path: "shadows/binpack?by=plugin", wantCode: 400,
			wantBody: `parameter \"by\": unknown parameter; this endpoint takes since, until, cluster`},
		{name: "bad shadow name", user: "admin", path: "shadows/Bin_Pack", wantCode: 400, wantBody: `parameter \"shadow\": \"Bin_Pack\" is not a scheduler profile name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.get(t, tt.user, v1alpha1.Prefix+tt.path)
			if code != tt.wantCode {
				t.Fatalf("status %d, want %d; body %s", code, tt.wantCode, body)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body %s does not contain %s", body, tt.wantBody)
			}
			if code != 200 {
				return
			}
			var got v1alpha1.ShadowSummary
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExplainShadows(t *testing.T) {
	e := newShadowEnv(t, "alice get a/*", "alice list nodes", "carol get a/*")
	explanation := func(t *testing.T, user, path string) v1alpha1.Explanation {
		t.Helper()
		code, body := e.get(t, user, v1alpha1.Prefix+path)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		var ex v1alpha1.Explanation
		if err := json.Unmarshal(body, &ex); err != nil {
			t.Fatal(err)
		}
		return ex
	}

	t.Run("the live attempt has its shadow runs", func(t *testing.T) {
		got := explanation(t, "alice", "namespaces/a/pods/p1/explain").Shadows
		want := []v1alpha1.ShadowRun{
			{Shadow: "binpack", Outcome: v1alpha1.ShadowOtherNode, Plugins: []string{"NodeResourcesFit"}, SelectedNode: "n2"},
			{Shadow: "strict", Outcome: v1alpha1.ShadowSameNode, SelectedNode: "n1"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("shadows (-want +got):\n%s", diff)
		}
	})
	t.Run("the shadow's nodes are hidden without list nodes", func(t *testing.T) {
		got := explanation(t, "carol", "namespaces/a/pods/p1/explain")
		want := []v1alpha1.ShadowRun{
			{Shadow: "binpack", Outcome: v1alpha1.ShadowOtherNode, Plugins: []string{"NodeResourcesFit"}},
			{Shadow: "strict", Outcome: v1alpha1.ShadowSameNode},
		}
		if diff := cmp.Diff(want, got.Shadows); diff != "" {
			t.Errorf("shadows (-want +got):\n%s", diff)
		}
		if !got.NodesHidden {
			t.Errorf("nodesHidden false, want true")
		}
	})
	t.Run("a shadow's own run", func(t *testing.T) {
		got := explanation(t, "alice", "namespaces/a/pods/p1/explain?shadow=binpack")
		if got.Profile != "binpack" || got.SelectedNode != "n2" || got.TotalRows != 2 || len(got.Shadows) != 0 {
			t.Errorf("profile %q, selected node %q, %d rows, %d shadows; want binpack's run choosing n2 of 2 rows, with no shadows",
				got.Profile, got.SelectedNode, got.TotalRows, len(got.Shadows))
		}
		if diff := cmp.Diff([]string{"NodeResourcesFit"}, got.FilterPlugins); diff != "" {
			t.Errorf("filter plugins of binpack's run (-want +got):\n%s", diff)
		}
	})
	t.Run("a shadow's own run without list nodes", func(t *testing.T) {
		code, body := e.get(t, "carol", v1alpha1.Prefix+"namespaces/a/pods/p1/explain?shadow=binpack")
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		for _, node := range []string{"n1", "n2"} {
			if strings.Contains(string(body), `"`+node+`"`) {
				t.Errorf("the explanation names node %s: %s", node, body)
			}
		}
	})
	for _, tt := range []struct {
		name, user, path, want string
		wantNot                []string
	}{
		{name: "a shadow the attempt has no run of", user: "alice", path: "namespaces/a/pods/p1/explain?shadow=nope",
			want: `attempt 1 of pod a/p1 has no run of shadow profile \"nope\"`},
		{name: "a pod that names a shadow", user: "alice", path: "namespaces/a/pods/shadowed/explain",
			want: `no attempts recorded for pod a/shadowed: its spec.schedulerName \"binpack\" names a shadow profile of \"default-scheduler\", and shadows never schedule pods; set spec.schedulerName to a live profile, such as \"default-scheduler\"`},
		{name: "a pod that names a live profile", user: "alice", path: "namespaces/a/pods/plain/explain",
			want: `no attempts recorded for pod a/plain"`, wantNot: []string{"shadow"}},
		{name: "a pod the cluster does not have", user: "alice", path: "namespaces/a/pods/gone/explain",
			want: `no attempts recorded for pod a/gone"`, wantNot: []string{"shadow"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.get(t, tt.user, v1alpha1.Prefix+tt.path)
			if code != http.StatusNotFound || !strings.Contains(string(body), tt.want) {
				t.Errorf("status %d, body %s; want 404 with %s", code, body, tt.want)
			}
			for _, not := range tt.wantNot {
				if strings.Contains(string(body), not) {
					t.Errorf("body %s says %q", body, not)
				}
			}
		})
	}
	code, body := e.get(t, "alice", v1alpha1.Prefix+"namespaces/a/pods/p1/explain?shadow=Bin_Pack")
	if code != http.StatusBadRequest || !strings.Contains(string(body), `parameter \"shadow\"`) {
		t.Errorf("a bad shadow name: status %d, body %s; want 400 naming the parameter", code, body)
	}
}

package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
)

func score(n int64) *int64 { return &n }

// shadowSummary is the fake sidecar's count of schedscope-binpack's runs.
func shadowSummary() *v1alpha1.ShadowSummary {
	return &v1alpha1.ShadowSummary{
		Shadow: "schedscope-binpack", Since: recordtest.Base.Add(-24 * time.Hour),
		Compared: 120, SameNode: 90, OtherNode: 20, OnlyLiveFits: 6, OnlyShadowFits: 1, Neither: 3,
		NotCompared: 4, NotComparedReasons: []v1alpha1.ReasonCount{
			{Reason: "the cluster snapshot changed during the shadow's run", Count: 3},
			{Reason: "the live attempt ended in an error", Count: 1},
		},
		TopPlugins: []v1alpha1.PluginCount{{Plugin: "NodeResourcesFit", Count: 17}, {Plugin: "ImageLocality", Count: 6}, {Plugin: "TaintToleration", Count: 2}},
	}
}

// liveExplanation is the fake sidecar's explanation of shop/web's attempt,
// with a run of each of its shadows; hidden is as a caller who may not
// list nodes gets it.
func liveExplanation(hidden bool) *v1alpha1.Explanation {
	e := &v1alpha1.Explanation{
		Pod: v1alpha1.PodRef{Namespace: "shop", Name: "web", UID: "uid-web"}, Profile: "default-scheduler", Attempt: 1, Seq: 1,
		Result: v1alpha1.ResultScheduled, SelectedNode: "big-2", Timing: v1alpha1.Timing{Finished: recordtest.Base},
		Nodes: v1alpha1.NodeCounts{Total: 3, Evaluated: 3, Feasible: 2},
		Groups: []v1alpha1.Group{
			{Index: 0, Verdict: v1alpha1.VerdictPassed, Nodes: 2, HasChosen: true},
			{Index: 1, Verdict: v1alpha1.VerdictRejected, Plugin: "NodeResourcesFit", Reasons: []string{"Insufficient cpu"}, Nodes: 1},
		},
		Rows: []v1alpha1.NodeRow{
			{Node: "big-2", Chosen: true, Verdict: v1alpha1.VerdictPassed, Rank: 1, Total: score(140)},
			{Node: "big-1", Verdict: v1alpha1.VerdictPassed, Rank: 2, Total: score(40)},
			{Node: "small-1", Group: 1, Verdict: v1alpha1.VerdictRejected, Plugin: "NodeResourcesFit", Reasons: []string{"Insufficient cpu"}},
		},
		TotalRows: 3,
		Shadows: []v1alpha1.ShadowRun{
			{Shadow: "schedscope-binpack", Outcome: v1alpha1.ShadowOtherNode, SelectedNode: "big-1", LiveNodeRank: 2, LiveNodeScore: score(180),
				ShadowNodeLiveScore: score(40), Plugins: []string{"NodeResourcesFit", "ImageLocality"}},
			{Shadow: "spread", Outcome: v1alpha1.ShadowSameNode, SelectedNode: "big-2"},
			{Shadow: "strict", Outcome: v1alpha1.ShadowOnlyLiveFits, Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
				Plugins: []string{"NodeAffinity"}, PostFilter: []v1alpha1.ShadowPostFilter{{Plugin: "DefaultPreemption", DryRun: true, Code: "Unschedulable",
					Message: "0/3 nodes are available: 3 Preemption is not helpful for scheduling."}}},
			{Shadow: "tight", Outcome: v1alpha1.ShadowOnlyLiveFits, Message: "0/3 nodes are available: 3 Insufficient cpu.", Plugins: []string{"NodeResourcesFit"},
				PostFilter: []v1alpha1.ShadowPostFilter{{Plugin: "DefaultPreemption", DryRun: true, Code: "Success", NominatedNode: "big-1",
					Victims: []v1alpha1.PodRef{{Namespace: "shop", Name: "batch-1"}, {Namespace: "shop", Name: "batch-2"}}}}},
			{Shadow: "canary", Outcome: v1alpha1.ShadowNotCompared, NotComparedReason: "the cluster snapshot changed during the shadow's run"},
		},
	}
	if hidden {
		e.NodesHidden, e.Rows, e.TotalRows = true, nil, 0
		for i := range e.Shadows {
			s := &e.Shadows[i]
			s.SelectedNode, s.LiveNodeRank, s.LiveNodeScore, s.ShadowNodeLiveScore = "", 0, nil, nil
			for j := range s.PostFilter {
				s.PostFilter[j].NominatedNode, s.PostFilter[j].Victims = "", nil
			}
		}
	}
	return e
}

// shadowRunExplanation is the fake sidecar's explanation of
// schedscope-binpack's run of shop/web's attempt.
func shadowRunExplanation() *v1alpha1.Explanation {
	return &v1alpha1.Explanation{
		Pod: v1alpha1.PodRef{Namespace: "shop", Name: "web", UID: "uid-web"}, Profile: "schedscope-binpack", Attempt: 1, Seq: 1,
		Result: v1alpha1.ResultScheduled, SelectedNode: "big-1", Timing: v1alpha1.Timing{Finished: recordtest.Base},
		Nodes:  v1alpha1.NodeCounts{Total: 3, Evaluated: 3, Feasible: 2},
		Groups: []v1alpha1.Group{{Index: 0, Verdict: v1alpha1.VerdictPassed, Nodes: 2, HasChosen: true}, {Index: 1, Verdict: v1alpha1.VerdictRejected, Plugin: "NodeResourcesFit", Reasons: []string{"Insufficient cpu"}, Nodes: 1}},
		Rows: []v1alpha1.NodeRow{
			{Node: "big-1", Chosen: true, Verdict: v1alpha1.VerdictPassed, Rank: 1, Total: score(240)},
			{Node: "big-2", Verdict: v1alpha1.VerdictPassed, Rank: 2, Total: score(180)},
		},
		TotalRows: 3,
	}
}

// shadowSidecar is a fake sidecar answering the shadows endpoints and
// shop/web's explain endpoint as the API does: "carol" may not list nodes,
// shadow "nope" is unknown. It returns the sidecar's URL and the requests
// it answered, as path?query.
func shadowSidecar(t *testing.T) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var requests []string
	write := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	notFound := func(w http.ResponseWriter, msg string) {
		write(w, http.StatusNotFound, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: msg, Details: &metav1.StatusDetails{Group: v1alpha1.GroupName}})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		q := r.URL.Query()
		switch path := strings.TrimPrefix(r.URL.Path, v1alpha1.Prefix); {
		case path == "namespaces/shop/pods/web/explain":
			switch shadow := q.Get(v1alpha1.ParamShadow); shadow {
			case "":
				write(w, http.StatusOK, liveExplanation(r.Header.Get("Authorization") == "Bearer carol"))
			case "schedscope-binpack":
				write(w, http.StatusOK, shadowRunExplanation())
			default:
				notFound(w, fmt.Sprintf("attempt 1 of pod shop/web has no run of shadow %q", shadow))
			}
		case path == "shadows/nope":
			notFound(w, `no runs of shadow "nope"`)
		case path == "shadows/idle":
			write(w, http.StatusOK, &v1alpha1.ShadowSummary{Shadow: "idle", Since: recordtest.Base.Add(-time.Hour)})
		case path == "shadows/schedscope-binpack", path == "namespaces/shop/shadows/schedscope-binpack":
			s := shadowSummary()
			if until, err := time.Parse(time.RFC3339, q.Get(v1alpha1.ParamUntil)); err == nil {
				s.Until = until
			}
			write(w, http.StatusOK, s)
		default:
			notFound(w, r.URL.Path+" not found")
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), requests...)
	}
}

// TestShadow runs kubectl schedscope shadow against the fake sidecar: the
// path and query of each scope and window, the summary's table as a golden
// file, and the errors of a missing shadow or a bad window.
func TestShadow(t *testing.T) {
	sidecarURL, requests := shadowSidecar(t)
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	tests := []struct {
		name        string
		args        []string
		wantCode    int
		wantRequest string
		golden      string
		wantErrOut  string
	}{{
		name: "every namespace", args: []string{"--shadow", "schedscope-binpack", "-A"},
		wantRequest: v1alpha1.Prefix + "shadows/schedscope-binpack?since=24h", golden: "shadow-all-namespaces",
	}, {
		name: "one namespace, a window", args: []string{"--shadow", "schedscope-binpack", "-n", "shop", "--since", "168h", "--until", "2026-01-02T00:00:00Z", "--cluster-name", "east"},
		wantRequest: v1alpha1.Prefix + "namespaces/shop/shadows/schedscope-binpack?cluster=east&since=168h&until=2026-01-02T00%3A00%3A00Z", golden: "shadow-namespace-window",
	}, {
		name: "the kubeconfig's namespace", args: []string{"--shadow", "schedscope-binpack"},
		wantRequest: v1alpha1.Prefix + "namespaces/shop/shadows/schedscope-binpack?since=24h",
	}, {
		name: "no runs", args: []string{"--shadow", "idle", "-A", "--since", "1h"}, golden: "shadow-no-runs",
	}, {
		name: "unknown shadow", args: []string{"--shadow", "nope", "-A"}, wantCode: ExitNotFound, wantErrOut: `no runs of shadow "nope"`,
	}, {
		name: "no --shadow", args: []string{"-A"}, wantCode: ExitUsage, wantErrOut: "--shadow is required",
	}, {
		name: "since too long ago", args: []string{"--shadow", "schedscope-binpack", "--since", "9000h"}, wantCode: ExitUsage, wantErrOut: "--since 9000h: want a duration from 0 to 8784h0m0s",
	}, {
		name: "until neither a duration nor a time", args: []string{"--shadow", "schedscope-binpack", "--until", "yesterday"}, wantCode: ExitUsage, wantErrOut: `--until "yesterday"`,
	}, {
		name: "an argument", args: []string{"schedscope-binpack"}, wantCode: ExitUsage,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(requests())
			code, out, errOut := run(t, append(append([]string{"shadow"}, tt.args...), "--kubeconfig", alice, "--sidecar-url", sidecarURL)...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stdout %s; stderr %s", code, tt.wantCode, out, errOut)
			}
			if got := requests()[before:]; tt.wantRequest != "" && (len(got) != 1 || got[0] != tt.wantRequest) {
				t.Errorf("requests %q, want %q", got, tt.wantRequest)
			}
			if tt.golden != "" {
				golden(t, tt.golden, out)
			}
			if !strings.Contains(errOut, tt.wantErrOut) {
				t.Errorf("stderr %q does not contain %q", errOut, tt.wantErrOut)
			}
		})
	}
}

// TestShadowJSON: -o json prints the API's ShadowSummary under its own
// field names, with its kind.
func TestShadowJSON(t *testing.T) {
	sidecarURL, _ := shadowSidecar(t)
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	code, out, errOut := run(t, "shadow", "--shadow", "schedscope-binpack", "-A", "-o", "json", "--kubeconfig", alice, "--sidecar-url", sidecarURL)
	if code != ExitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(out), &fields); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	want := map[string]any{"kind": "ShadowSummary", "compared": 120.0, "sameNode": 90.0, "otherNode": 20.0, "onlyLiveFits": 6.0, "onlyShadowFits": 1.0, "neither": 3.0, "notCompared": 4.0}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("field %s is %v, want %v", k, fields[k], v)
		}
	}
	var got v1alpha1.ShadowSummary
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shadowSummary(), &got); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

// TestExplainShadows: explain prints the Shadows section of the attempt,
// naming no node to a caller who may not list nodes, and --shadow
// explains a shadow's own run with the same printer.
func TestExplainShadows(t *testing.T) {
	sidecarURL, requests := shadowSidecar(t)
	tests := []struct {
		name        string
		user        string
		args        []string
		wantCode    int
		wantRequest string
		wantErrOut  string
	}{
		{name: "explain-pod-shadows", user: "alice", wantRequest: v1alpha1.Prefix + "namespaces/shop/pods/web/explain?limit=10&offset=0"},
		{name: "explain-pod-shadows-hidden", user: "carol"},
		{name: "explain-pod-shadow-run", user: "alice", args: []string{"--shadow", "schedscope-binpack"},
			wantRequest: v1alpha1.Prefix + "namespaces/shop/pods/web/explain?limit=10&offset=0&shadow=schedscope-binpack"},
		{name: "unknown shadow", user: "alice", args: []string{"--shadow", "nope"}, wantCode: ExitNotFound, wantErrOut: `attempt 1 of pod shop/web has no run of shadow "nope"` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := kubeconfig(t, fakeAPIServer(t), tt.user, "shop")
			before := len(requests())
			code, out, errOut := run(t, append([]string{"explain", "pod/web", "--kubeconfig", kc, "--sidecar-url", sidecarURL}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stdout %s; stderr %s", code, tt.wantCode, out, errOut)
			}
			if got := requests()[before:]; tt.wantRequest != "" && (len(got) != 1 || got[0] != tt.wantRequest) {
				t.Errorf("requests %q, want %q", got, tt.wantRequest)
			}
			if tt.wantCode != ExitOK {
				if !strings.HasSuffix(errOut, tt.wantErrOut) {
					t.Errorf("stderr %q does not end with %q", errOut, tt.wantErrOut)
				}
				return
			}
			golden(t, tt.name, out)
			if tt.user != "carol" {
				return
			}
			for _, hidden := range []string{"big-1", "small-1", "batch-1", "ranks", "the live profile scores", "would preempt", "()"} {
				if strings.Contains(out, hidden) {
					t.Errorf("a caller who may not list nodes is shown %q:\n%s", hidden, out)
				}
			}
		})
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 102: "102nd", 111: "111th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/api"
	"github.com/schedscope/schedscope/pkg/sidecar/hints"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
	"github.com/schedscope/schedscope/pkg/stream"
)

func fixture() []*record.Attempt {
	t0 := recordtest.Base
	as := []*record.Attempt{
		recordtest.MakeAttempt("shop", "web", "uid-web").Finished(t0).
			Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").
			Rejected("NodeResourcesFit", "Insufficient cpu", "small-1", "small-2").
			Passed("big-1", "big-2", "big-3").
			NotEvaluated(record.NotEvaluatedEnoughFeasible, "far-1").
			Scores([]string{"NodeResourcesFit", "ImageLocality"}, map[string][]int64{
				"big-1": {30, 10}, "big-2": {90, 50}, "big-3": {60, 0},
			}).Scheduled("big-2").Obj(),
		recordtest.MakeAttempt("shop", "db", "uid-db").Finished(t0.Add(time.Second)).Unschedulable("0/2 nodes are available").
			Rejected("NodeAffinity", "node(s) didn't match Pod's node affinity/selector", "a", "b").Obj(),
		recordtest.MakeAttempt("batch", "job", "uid-job").Finished(t0.Add(2*time.Second)).Unschedulable("0/1 nodes are available").
			Rejected("NodeResourcesFit", "Insufficient memory", "a").Obj(),
	}
	as[0].Details = []record.PluginDetail{
		{Plugin: "NodeResourcesFit", Node: "small-1", Detail: "small-1 has 500m of cpu free"},
		{Plugin: "NUMATopology", Detail: "the pod asks for one NUMA zone"},
	}
	return as
}

// fixtureRecords are fixture()'s attempts as the stream numbers them, the
// first traced.
func fixtureRecords() []stream.Record {
	records := stream.Records(1, fixture()...)
	records[0].TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	return records
}

// sidecar serves the real API over a store holding fixture(); it
// authenticates "Bearer <user>", lets "alice" do anything and "carol"
// anything but list nodes.
func sidecar(t *testing.T) http.Handler {
	t.Helper()
	h, _ := sidecarStore(t)
	return h
}

// sidecarStore is sidecar with its store, for tests that add records.
func sidecarStore(t *testing.T) (http.Handler, store.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Append(context.Background(), v1alpha1.Cursor{Epoch: "e1", Seq: 3}, fixtureRecords()); err != nil {
		t.Fatal(err)
	}
	authn := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return nil, false, nil
		}
		return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
	})
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		switch name := a.GetUser().GetName(); {
		case name == "alice", name == "carol" && a.GetResource() != "nodes":
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	h, err := api.New(api.Config{Store: st, Authenticator: authn, Authorizer: authz, Hints: fixtureHints,
		// The fixtures are months old: top counts them over a year.
		MaxRejectionsWindow: v1alpha1.MaxRejectionAge})
	if err != nil {
		t.Fatal(err)
	}
	return h, st
}

// fixtureHints computes the hints of fixture()'s attempts as if shop/db
// selected disk=ssd and its nodes a and b had no labels.
func fixtureHints(a *record.Attempt, showNodes bool) []v1alpha1.Hint {
	if a.Pod.UID != "uid-db" {
		return nil
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}}
	nodes := map[string]hints.Node{}
	for _, name := range []string{"a", "b"} {
		nodes[name] = hints.Node{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}}}}
	}
	return hints.Compute(a, pod, nodes, showNodes)
}

// kubeconfig writes a kubeconfig for server with token and namespace.
func kubeconfig(t *testing.T, server, token, namespace string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: %s
contexts:
- name: ctx
  context:
    cluster: c
    user: u
    namespace: %s
current-context: ctx
`, server, token, namespace)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(context.Background(), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestExplainTable(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	kc := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	header := `Pod:      shop/web (uid uid-web)
Attempt:  1 (profile default-scheduler, finished 2026-01-02T03:04:05Z)
Result:   scheduled
Node:     big-2
Margin:   big-2 beat big-3 by 80: ImageLocality +50, NodeResourcesFit +30
Trace:    4bf92f3577b34da6a3ce929d0e0e4736
Nodes:    7 total, 6 evaluated, 3 feasible
Detail:   NUMATopology: the pod asks for one NUMA zone

NODES  VERDICT        PLUGIN            REASONS
3      feasible       -                 holds the chosen node
2      rejected       NodeResourcesFit  Insufficient cpu
1      rejected       TaintToleration   node(s) had untolerated taint {dedicated: infra}
1      not-evaluated  -                 enough feasible nodes found

`
	tests := []struct {
		name  string
		flags []string
		want  string
	}{{
		name: "default: the top feasible nodes",
		want: `NODE   VERDICT   PLUGIN  TOTAL  DETAIL
big-2  chosen    -       140    rank 1
big-3  feasible  -       60     rank 2
big-1  feasible  -       40     rank 3
... 4 more nodes (--all-nodes, --verdict)
`,
	}, {
		name:  "wide, every node",
		flags: []string{"-o", "wide", "--all-nodes"},
		want: `NODE          VERDICT        PLUGIN            TOTAL  NodeResourcesFit  ImageLocality  DETAIL
big-2         chosen         -                 140    90                50             rank 1
big-3         feasible       -                 60     60                0              rank 2
big-1         feasible       -                 40     30                10             rank 3
small-1       rejected       NodeResourcesFit  -      -                 -              Insufficient cpu (NodeResourcesFit: small-1 has 500m of cpu free)
small-2       rejected       NodeResourcesFit  -      -                 -              Insufficient cpu
tainted-node  rejected       TaintToleration   -      -                 -              node(s) had untolerated taint {dedicated: infra}
far-1         not-evaluated  -                 -      -                 -              enough feasible nodes found
`,
	}, {
		name:  "rejected, at most 2",
		flags: []string{"--verdict", "rejected", "--limit", "2"},
		want: `NODE     VERDICT   PLUGIN            TOTAL  DETAIL
small-1  rejected  NodeResourcesFit  -      Insufficient cpu (NodeResourcesFit: small-1 has 500m of cpu free)
small-2  rejected  NodeResourcesFit  -      Insufficient cpu
... 5 more nodes (--all-nodes, --verdict)
`,
	}, {
		name:  "the best one",
		flags: []string{"--limit", "1"},
		want: `NODE   VERDICT  PLUGIN  TOTAL  DETAIL
big-2  chosen   -       140    rank 1
... 6 more nodes (--all-nodes, --verdict)
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"explain", "pod/web", "--kubeconfig", kc, "--sidecar-url", srv.URL}, tt.flags...)...)
			if code != ExitOK {
				t.Fatalf("exit code %d, want 0; stderr %s", code, errOut)
			}
			if diff := cmp.Diff(header+tt.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
	if code, _, errOut := run(t, "explain", "pod/web", "--kubeconfig", kc, "--sidecar-url", srv.URL, "--verdict", "maybe"); code != ExitUsage || !strings.Contains(errOut, `--verdict "maybe"`) {
		t.Errorf("--verdict maybe: exit code %d, stderr %s; want %d naming the flag", code, errOut, ExitUsage)
	}
}

func TestExitCodesAndFormats(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	bob := kubeconfig(t, "https://apiserver.invalid", "bob", "shop")
	carol := kubeconfig(t, "https://apiserver.invalid", "carol", "shop")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string
		wantErrOut []string
	}{
		{name: "pending pod", args: []string{"explain", "pod/db", "--kubeconfig", alice}, wantCode: ExitPending, wantOut: []string{"Result:   unschedulable", "NodeAffinity"}},
		{name: "namespace flag", args: []string{"explain", "job", "-n", "batch", "--kubeconfig", alice}, wantCode: ExitPending, wantOut: []string{"Insufficient memory"}},
		{name: "unknown pod", args: []string{"explain", "pod/nope", "--kubeconfig", alice}, wantCode: ExitNotFound, wantErrOut: []string{"no attempts recorded for pod shop/nope"}},
		{name: "why not node", args: []string{"explain", "pod/web", "--node", "tainted-node", "--kubeconfig", alice}, wantCode: ExitOK, wantOut: []string{"node tainted-node was rejected at Filter by TaintToleration"}},
		{name: "unknown node", args: []string{"explain", "pod/web", "--node", "ghost", "--kubeconfig", alice}, wantCode: ExitNotFound},
		{name: "forbidden", args: []string{"explain", "pod/web", "--kubeconfig", bob}, wantCode: ExitFailure, wantErrOut: []string{"403"}},
		{name: "nodes hidden", args: []string{"explain", "pod/web", "--kubeconfig", carol}, wantCode: ExitOK, wantOut: []string{
			"NODES  VERDICT        PLUGIN            REASONS", "2      rejected       NodeResourcesFit  Insufficient cpu", "hidden: you may not list nodes"}},
		{name: "why not node needs list nodes", args: []string{"explain", "pod/web", "--node", "small-1", "--kubeconfig", carol}, wantCode: ExitFailure, wantErrOut: []string{"cannot list nodes"}},
		{name: "no argument", args: []string{"explain", "--kubeconfig", alice}, wantCode: ExitUsage},
		{name: "bad argument", args: []string{"explain", "deploy/web/x", "--kubeconfig", alice}, wantCode: ExitUsage},
		{name: "bad output", args: []string{"explain", "pod/web", "-o", "xml", "--kubeconfig", alice}, wantCode: ExitUsage, wantErrOut: []string{"--output"}},
		{name: "unknown flag", args: []string{"explain", "pod/web", "--frobnicate"}, wantCode: ExitUsage},
		{name: "no subcommand", args: []string{}, wantCode: ExitUsage},
		{name: "version", args: []string{"--version"}, wantCode: ExitOK, wantOut: []string{"kubectl schedscope devel\n"}},
		{name: "pending in namespace", args: []string{"pending", "--kubeconfig", alice}, wantCode: ExitOK, wantOut: []string{"shop       db    default-scheduler  1         unschedulable", "NodeAffinity(2)"}},
		{name: "pending everywhere", args: []string{"pending", "-A", "--kubeconfig", alice}, wantCode: ExitOK, wantOut: []string{"batch", "shop"}},
		{name: "pending yaml", args: []string{"pending", "-A", "-o", "yaml", "--kubeconfig", alice}, wantCode: ExitOK, wantOut: []string{"name: job", "result: unschedulable"}},
		{name: "unreachable sidecar", args: []string{"pending", "--kubeconfig", alice, "--sidecar-url", "http://127.0.0.1:1"}, wantCode: ExitFailure, wantErrOut: []string{"reaching the sidecar"}},
		{name: "credentials over plain http", args: []string{"pending", "--kubeconfig", alice, "--sidecar-url", "http://sidecar.example:8080"}, wantCode: ExitUsage, wantErrOut: []string{"refusing to send the kubeconfig's credentials over plain http"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !strings.Contains(strings.Join(args, " "), "--sidecar-url") {
				args = append(args, "--sidecar-url", srv.URL)
			}
			code, out, errOut := run(t, args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stdout %s; stderr %s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout does not contain %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantErrOut {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestExplainJSONAndYAML(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	kc := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			code, out, errOut := run(t, "explain", "pod/web", "-o", format, "--kubeconfig", kc, "--sidecar-url", srv.URL)
			if code != ExitOK {
				t.Fatalf("exit code %d; stderr %s", code, errOut)
			}
			var e v1alpha1.Explanation
			var err error
			if format == "json" {
				err = json.Unmarshal([]byte(out), &e)
			} else {
				err = yaml.Unmarshal([]byte(out), &e)
			}
			if err != nil {
				t.Fatalf("output is not %s: %v\n%s", format, err, out)
			}
			var nodes []string
			for _, r := range e.Rows {
				nodes = append(nodes, r.Node)
			}
			want := []string{"big-2", "big-3", "big-1", "small-1", "small-2", "tainted-node", "far-1"}
			if diff := cmp.Diff(want, nodes); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

// The default route is the kube-apiserver, which serves the sidecar's API
// group as an aggregated API: a fake apiserver answers the group's paths
// from the sidecar and everything else as a kube-apiserver without the
// APIService would (the real aggregator is tested in test/integration/sidecar).
func TestAggregatedRoute(t *testing.T) {
	side := sidecar(t)
	var seen []string
	aggregated := true
	// client-go sends credentials over TLS only.
	apiserver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path)
		if !aggregated || !strings.HasPrefix(r.URL.Path, v1alpha1.Prefix) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}`)
			return
		}
		side.ServeHTTP(w, r)
	}))
	defer apiserver.Close()
	kc := kubeconfig(t, apiserver.URL, "alice", "shop")

	code, out, errOut := run(t, "explain", "pod/web", "--kubeconfig", kc)
	if code != ExitOK || !strings.Contains(out, "big-2  chosen") {
		t.Errorf("through the apiserver: exit code %d; stdout %s; stderr %s", code, out, errOut)
	}
	if len(seen) == 0 || seen[0] != v1alpha1.Prefix+"namespaces/shop/pods/web/explain" {
		t.Errorf("paths %v", seen)
	}
	// --server names the apiserver, as it does to kubectl.
	elsewhere := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	if code, out, errOut := run(t, "explain", "pod/web", "--kubeconfig", elsewhere, "--server", apiserver.URL); code != ExitOK || !strings.Contains(out, "big-2  chosen") {
		t.Errorf("--server %s: exit code %d; stdout %s; stderr %s", apiserver.URL, code, out, errOut)
	}
	aggregated = false
	code, _, errOut = run(t, "explain", "pod/web", "--kubeconfig", kc)
	if code != ExitFailure || !strings.Contains(errOut, "is the APIService v1alpha1.schedscope.io installed") {
		t.Errorf("no APIService: exit code %d (want 1, not 4: the pod was not looked up); stderr %s", code, errOut)
	}
}

// TestExplainWithoutNodeRights: a caller who may not list nodes sees no
// node but the pod's own (which the pod shows too).
func TestExplainWithoutNodeRights(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	carol := kubeconfig(t, "https://apiserver.invalid", "carol", "shop")
	for _, output := range []string{"table", "json"} {
		code, out, errOut := run(t, "explain", "pod/web", "-o", output, "--kubeconfig", carol, "--sidecar-url", srv.URL)
		if code != ExitOK {
			t.Fatalf("-o %s: exit code %d: %s", output, code, errOut)
		}
		for _, node := range []string{"big-1", "big-3", "small-1", "small-2", "tainted-node", "far-1"} {
			if strings.Contains(out, node) {
				t.Errorf("-o %s names node %s:\n%s", output, node, out)
			}
		}
	}
}

// TestExplainHints: an unschedulable pod's explanation says what would make
// it fit, naming nodes only to a caller who may list them.
func TestExplainHints(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	for _, tt := range []struct {
		user, want string
	}{
		{"alice", "What would make it fit:\n  NodeAffinity: 2 nodes would fit with label disk=ssd (a, b): add it to one, or change the pod's node selector or affinity\n"},
		{"carol", "What would make it fit:\n  NodeAffinity: 2 nodes would fit with label disk=ssd: add it to one, or change the pod's node selector or affinity\n"},
	} {
		kc := kubeconfig(t, "https://apiserver.invalid", tt.user, "shop")
		code, out, errOut := run(t, "explain", "pod/db", "--kubeconfig", kc, "--sidecar-url", srv.URL)
		if code != ExitPending {
			t.Fatalf("%s: exit code %d, want %d; stderr %s", tt.user, code, ExitPending, errOut)
		}
		if !strings.Contains(out, tt.want) {
			t.Errorf("%s: output lacks %q:\n%s", tt.user, tt.want, out)
		}
	}
}

// TestTop counts the fixture's rejections by plugin across namespaces and
// by node in one; a caller who may not list nodes is refused by node.
func TestTop(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	carol := kubeconfig(t, "https://apiserver.invalid", "carol", "shop")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{{
		name: "plugins", args: []string{"top", "plugins", "-A", "--since", "8760h", "--kubeconfig", alice},
		want: `PLUGIN            ATTEMPTS  NODES REJECTED
NodeResourcesFit  2         3
NodeAffinity      1         2
TaintToleration   1         1
`,
	}, {
		name: "nodes", args: []string{"top", "nodes", "--since", "8760h", "--kubeconfig", alice},
		want: `NODE          ATTEMPTS  REJECTIONS  BY PLUGIN
a             1         1           NodeAffinity(1)
b             1         1           NodeAffinity(1)
small-1       1         1           NodeResourcesFit(1)
small-2       1         1           NodeResourcesFit(1)
tainted-node  1         1           TaintToleration(1)
`,
	}, {
		name: "none in the last hour", args: []string{"top", "plugins", "--kubeconfig", alice},
		want: "No rejections since",
	}, {
		name: "nodes without node rights", args: []string{"top", "nodes", "--since", "8760h", "--kubeconfig", carol}, wantCode: ExitFailure,
	}, {
		name: "neither plugins nor nodes", args: []string{"top", "pods", "--kubeconfig", alice}, wantCode: ExitUsage,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append(tt.args, "--sidecar-url", srv.URL)...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stdout %s; stderr %s", code, tt.wantCode, out, errOut)
			}
			if !strings.HasPrefix(out, tt.want) {
				t.Errorf("output (-want +got):\n%s", cmp.Diff(tt.want, out))
			}
		})
	}
}

// TestHistoryStatusVersion runs the other subcommands on the fixture.
func TestHistoryStatusVersion(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{{
		name: "history",
		args: []string{"history", "pod/db"},
		want: `ATTEMPT  RESULT         NODE  REJECTED BY      FINISHED              MESSAGE
1        unschedulable  -     NodeAffinity(2)  2026-01-02T03:04:06Z  0/2 nodes are available
`,
	}, {
		name: "history of a pod never seen", args: []string{"history", "pod/nobody"}, wantCode: ExitNotFound,
	}, {
		name: "status",
		args: []string{"status"},
		want: `Stream:    not followed by this sidecar
Store:     3 attempts (0 folded repeats), 3 pods,`,
	}, {
		name: "version", args: []string{"version"}, want: "kubectl schedscope devel\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append(tt.args, "--kubeconfig", alice, "--sidecar-url", srv.URL)...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stdout %s; stderr %s", code, tt.wantCode, out, errOut)
			}
			if !strings.HasPrefix(out, tt.want) {
				t.Errorf("output (-want +got):\n%s", cmp.Diff(tt.want, out))
			}
		})
	}
}

// TestCompletion: the __complete command kubectl_complete-schedscope runs
// completes subcommands, flag values and the pods the sidecar has records of.
func TestCompletion(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"subcommands", []string{"__complete", "hi"}, "history\tList every recorded scheduling attempt of a pod, oldest first\n:4\n"},
		{"pods", []string{"__complete", "explain", "--kubeconfig", alice, "--sidecar-url", srv.URL, "pod/"}, "pod/db\npod/web\n:4\n"},
		{"pods by prefix", []string{"__complete", "history", "--kubeconfig", alice, "--sidecar-url", srv.URL, "pod/w"}, "pod/web\n:4\n"},
		{"verdicts", []string{"__complete", "explain", "pod/web", "--verdict", ""}, "feasible\nrejected\nnot-evaluated\n:4\n"},
		{"shadow windows", []string{"__complete", "shadow", "--since", ""}, "1h\n24h\n168h\n:4\n"},
		{"outputs", []string{"__complete", "top", "-o", ""}, "table\nwide\nname\njson\nyaml\njsonpath=\njsonpath-as-json=\ngo-template=\ncustom-columns=\ncustom-columns-file=\n:4\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			if code != ExitOK {
				t.Fatalf("exit code %d; stderr %s", code, errOut)
			}
			if diff := cmp.Diff(tt.want, out); diff != "" {
				t.Errorf("completion (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExplainWaitAndNoFeasibleNode: --wait answers as soon as an attempt is
// recorded and gives up with not found; with no feasible node the default
// view shows the rejected ones.
func TestExplainWaitAndNoFeasibleNode(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	code, out, errOut := run(t, "explain", "pod/db", "--wait", "5s", "--kubeconfig", alice, "--sidecar-url", srv.URL)
	if code != ExitPending || !strings.Contains(out, "NODE  VERDICT   PLUGIN        TOTAL  DETAIL\na     rejected  NodeAffinity") {
		t.Errorf("explain pod/db --wait 5s: exit code %d, want %d with the rejected nodes; stdout %s; stderr %s", code, ExitPending, out, errOut)
	}
	code, _, errOut = run(t, "explain", "pod/nobody", "--wait", "1s", "--kubeconfig", alice, "--sidecar-url", srv.URL)
	if code != ExitNotFound || !strings.Contains(errOut, "no attempt of pod shop/nobody recorded within 1s") {
		t.Errorf("explain pod/nobody --wait 1s: exit code %d, want %d; stderr %s", code, ExitNotFound, errOut)
	}
}

// TestKubectlPrinters: -o takes kubectl's printers over the API's answers.
func TestKubectlPrinters(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"jsonpath", []string{"explain", "pod/web", "-o", "jsonpath={.selectedNode} {.rows[1].node}"}, ExitOK, "big-2 big-3"},
		{"go-template", []string{"pending", "-o", "go-template={{range .items}}{{.pod.name}} {{end}}"}, ExitOK, "db "},
		{"kind", []string{"top", "plugins", "-A", "--since", "8760h", "-o", "jsonpath={.kind} {.items[0].key}"}, ExitOK, "RejectionList NodeResourcesFit"},
		{"name of pending pods", []string{"pending", "-A", "-o", "name"}, ExitOK, "pod/job\npod/db\n"},
		{"name of an explained pod", []string{"explain", "pod/web", "-o", "name"}, ExitOK, "pod/web\n"},
		{"name of rejected nodes", []string{"top", "nodes", "--since", "8760h", "--limit", "2", "-o", "name"}, ExitOK, "node/a\nnode/b\n"},
		{"name of plugins", []string{"top", "plugins", "-o", "name"}, ExitUsage, ""},
		{"name of the status", []string{"status", "-o", "name"}, ExitUsage, ""},
		{"custom columns of a list", []string{"pending", "-A", "-o", "custom-columns=NS:.pod.namespace,POD:.pod.name,REJECTED BY:.latest.reasons[*].plugin"},
			ExitOK, "NS      POD   REJECTED BY\nbatch   job   NodeResourcesFit\nshop    db    NodeAffinity\n"},
		{"custom columns without headers", []string{"top", "plugins", "-A", "--since", "8760h", "--no-headers", "-o", "custom-columns=PLUGIN:.key,NODES:.nodes"},
			ExitOK, "NodeResourcesFit   3\nNodeAffinity       2\nTaintToleration    1\n"},
		{"custom columns of an explanation", []string{"explain", "pod/web", "-o", "custom-columns=POD:.pod.name,NODE:.selectedNode"}, ExitOK, "POD   NODE\nweb   big-2\n"},
		{"custom columns without a spec", []string{"pending", "-o", "custom-columns="}, ExitUsage, ""},
		{"pending without headers", []string{"pending", "-A", "--no-headers"}, ExitOK, ""},
		{"unknown format", []string{"explain", "pod/web", "-o", "xml"}, ExitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append(tt.args, "--kubeconfig", alice, "--sidecar-url", srv.URL)...)
			if tt.name == "pending without headers" {
				// The rows' PENDING FOR ages depend on the clock.
				if code != tt.wantCode || !strings.HasPrefix(out, "batch  job  default-scheduler") || strings.Contains(out, "NAMESPACE") {
					t.Errorf("exit code %d, output %q; want rows and no header; stderr %s", code, out, errOut)
				}
				return
			}
			if code != tt.wantCode || out != tt.want {
				t.Errorf("exit code %d, output %q; want %d, %q; stderr %s", code, out, tt.wantCode, tt.want, errOut)
			}
		})
	}
}

// TestPendingClusterColumn: the pending table shows a CLUSTER column when
// its pods are of more than one cluster, and not otherwise.
func TestPendingClusterColumn(t *testing.T) {
	now := recordtest.Base.Add(time.Minute)
	pod := func(cluster, name string) v1alpha1.PodStatus {
		return v1alpha1.PodStatus{Cluster: cluster, Pod: v1alpha1.PodRef{Namespace: "ns", Name: name}, Profile: "p", FirstSeen: recordtest.Base,
			Latest: v1alpha1.AttemptSummary{Cluster: cluster, Attempt: 1, Result: v1alpha1.ResultUnschedulable, Message: "no"}}
	}
	for _, tt := range []struct {
		name string
		pods []v1alpha1.PodStatus
		want string
	}{
		{name: "one cluster", pods: []v1alpha1.PodStatus{pod("east", "a"), pod("east", "b")}, want: "NAMESPACE  NAME"},
		{name: "two clusters", pods: []v1alpha1.PodStatus{pod("east", "a"), pod("west", "a")}, want: "CLUSTER  NAMESPACE  NAME"},
		{name: "a named and the unnamed", pods: []v1alpha1.PodStatus{pod("", "a"), pod("west", "a")}, want: "CLUSTER  NAMESPACE  NAME"},
	} {
		var b strings.Builder
		PrintPending(&b, tt.pods, now, true)
		if !strings.HasPrefix(b.String(), tt.want) {
			t.Errorf("%s: table\n%s\nwant it to start %q", tt.name, b.String(), tt.want)
		}
		if strings.HasPrefix(tt.want, "CLUSTER") && !strings.Contains(b.String(), "\nwest ") {
			t.Errorf("%s: table\n%s\nwant a row of west", tt.name, b.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a command writing while a test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// pendingWatch is `pending -A -w`, run as alice against a sidecar.
type pendingWatch struct {
	out, errOut syncBuffer
	// stop interrupts the command and returns its exit code.
	stop func() int
}

// startPendingWatch starts `pending -A -w` against sidecarURL, asking every
// 20 ms; it is stopped when the test ends if the test has not stopped it.
func startPendingWatch(t *testing.T, sidecarURL string) *pendingWatch {
	t.Helper()
	interval := watchInterval
	watchInterval = 20 * time.Millisecond
	t.Cleanup(func() { watchInterval = interval })
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	ctx, cancel := context.WithCancel(context.Background())
	w := &pendingWatch{}
	done := make(chan int)
	go func() {
		done <- Execute(ctx, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &w.out, ErrOut: &w.errOut},
			[]string{"pending", "-A", "-w", "--kubeconfig", alice, "--sidecar-url", sidecarURL})
	}()
	w.stop = sync.OnceValue(func() int {
		cancel()
		return <-done
	})
	t.Cleanup(func() { w.stop() })
	return w
}

// waitFor waits until the command has printed what.
func (w *pendingWatch) waitFor(t *testing.T, what string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(w.out.String(), what), nil
	}); err != nil {
		t.Fatalf("no %q in the output of pending -w:\n%s\nstderr: %s", what, w.out.String(), w.errOut.String())
	}
}

// TestPendingWatch: pending -w prints the list, then a row (without the
// header) for a pod whose latest attempt changed, and a line for a pod that
// left the list, until interrupted.
func TestPendingWatch(t *testing.T) {
	h, st := sidecarStore(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	w := startPendingWatch(t, srv.URL)
	w.waitFor(t, "0/2 nodes are available")

	t1 := recordtest.Base.Add(time.Minute)
	next := []*record.Attempt{
		recordtest.MakeAttempt("shop", "db", "uid-db").Number(2).Finished(t1).Unschedulable("0/3 nodes are available").
			Rejected("NodeAffinity", "node(s) didn't match Pod's node affinity/selector", "a", "b", "c").Obj(),
		recordtest.MakeAttempt("batch", "job", "uid-job").Number(2).Finished(t1).Passed("a").Scheduled("a").Obj(),
	}
	if err := st.Append(context.Background(), v1alpha1.Cursor{Epoch: "e1", Seq: 5}, stream.Records(4, next...)); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "batch/job left the pending list")
	w.waitFor(t, "0/3 nodes are available")
	if code := w.stop(); code != ExitOK {
		t.Errorf("pending -w exited %d after the interrupt, want %d; stderr %s", code, ExitOK, w.errOut.String())
	}
	if got := strings.Count(w.out.String(), "NAMESPACE"); got != 1 {
		t.Errorf("pending -w printed the header %d times, want once:\n%s", got, w.out.String())
	}
	alice := kubeconfig(t, "https://apiserver.invalid", "alice", "shop")
	if code, _, _ := run(t, "pending", "-w", "-o", "json", "--kubeconfig", alice, "--sidecar-url", srv.URL); code != ExitUsage {
		t.Errorf("pending -w -o json exited %d, want %d", code, ExitUsage)
	}
}

// TestPendingWatchClusters: once pending -w has listed pods of two
// clusters, a changed pod's row and a leaving pod's line name its cluster,
// even when every change is of one cluster.
func TestPendingWatchClusters(t *testing.T) {
	pod := func(cluster, name string, seq uint64) v1alpha1.PodStatus {
		return v1alpha1.PodStatus{Cluster: cluster, Pod: v1alpha1.PodRef{Namespace: "ns", Name: name, UID: "uid-" + name}, Profile: "p", FirstSeen: recordtest.Base,
			Latest: v1alpha1.AttemptSummary{Cluster: cluster, Seq: seq, Attempt: int(seq), Result: v1alpha1.ResultUnschedulable, Message: fmt.Sprintf("attempt %d", seq)}}
	}
	var lists atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list := v1alpha1.PodList{Items: []v1alpha1.PodStatus{pod("east", "a", 1), pod("west", "b", 1)}}
		if lists.Add(1) > 1 {
			list.Items = []v1alpha1.PodStatus{pod("east", "a", 2)}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer srv.Close()
	w := startPendingWatch(t, srv.URL)
	w.waitFor(t, "attempt 2")
	w.waitFor(t, "left the pending list")
	w.stop()
	for _, want := range []string{"\neast  ns  a  p  2 ", "\nns/b of cluster west left the pending list"} {
		if !strings.Contains(w.out.String(), want) {
			t.Errorf("pending -w printed\n%s\nwant %q in it", w.out.String(), want)
		}
	}
}

// TestPrintStatusByCluster: a store of several clusters is counted per
// cluster under the totals; one unnamed cluster only by the totals.
func TestPrintStatusByCluster(t *testing.T) {
	var out strings.Builder
	PrintStatus(&out, &v1alpha1.Status{Store: v1alpha1.StoreStats{
		Attempts: 12, Folded: 2, Pods: 6, Bytes: 900, DiskBytes: 4096,
		Clusters: []v1alpha1.ClusterStoreStats{
			{Cluster: "", Attempts: 7, Folded: 2, Pods: 3, Bytes: 500},
			{Cluster: "east", Attempts: 5, Pods: 3, Bytes: 400},
		},
	}})
	want := `Stream:    not followed by this sidecar
Store:     12 attempts (2 folded repeats), 6 pods, 900 bytes of records, 4096 bytes on disk
  cluster (unnamed): 7 attempts (2 folded repeats), 3 pods, 500 bytes of records
  cluster east: 5 attempts (0 folded repeats), 3 pods, 400 bytes of records
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	out.Reset()
	PrintStatus(&out, &v1alpha1.Status{Store: v1alpha1.StoreStats{Attempts: 1, Pods: 1, Clusters: []v1alpha1.ClusterStoreStats{{Attempts: 1, Pods: 1}}}})
	if strings.Contains(out.String(), "cluster") {
		t.Errorf("one unnamed cluster is counted apart:\n%s", out.String())
	}
}

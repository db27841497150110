package app

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// TestPodsOfAWorkloadOrASelector runs the commands that take a workload
// or -l against the fake kube-apiserver and the sidecar; every table is a
// golden file, spacing included.
func TestPodsOfAWorkloadOrASelector(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	alice := kubeconfig(t, fakeAPIServer(t), "alice", "shop")
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{name: "explain-pod-margin", args: []string{"explain", "pod/web"}},
		{name: "explain-deployment", args: []string{"explain", "deploy/shop"}, wantCode: ExitPending},
		{name: "explain-deployment-wide", args: []string{"explain", "deployment.apps/shop", "-o", "wide"}, wantCode: ExitPending},
		{name: "explain-selector", args: []string{"explain", "-l", "app=shop,!nothing"}, wantCode: ExitPending},
		{name: "explain-selector-sorted", args: []string{"explain", "-l", "app=shop", "--sort-by", "{.pod.name}",
			"-o", "custom-columns=POD:.pod.name,RESULT:.result,NODE:.selectedNode"}, wantCode: ExitPending},
		{name: "history-selector", args: []string{"history", "-l", "app=shop"}},
		{name: "history-selector-name", args: []string{"history", "-l", "app=shop", "-o", "name"}},
		{name: "history-selector-sorted", args: []string{"history", "-l", "app=shop", "--sort-by", "{.finished}"}},
		{name: "pending-selector", args: []string{"pending", "-A", "-l", "tier=batch", "-o", "custom-columns=NS:.pod.namespace,POD:.pod.name,REJECTED BY:.latest.reasons[*].plugin"}},
		{name: "top-sorted", args: []string{"top", "plugins", "-A", "--since", "8760h", "--sort-by", ".key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append(tt.args, "--kubeconfig", alice, "--sidecar-url", srv.URL, "--cache-dir", t.TempDir())...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stdout %s; stderr %s", code, tt.wantCode, out, errOut)
			}
			golden(t, tt.name, out)
		})
	}
}

// TestExplainSelectorJSON: -o json of the pods of -l is the list of their
// latest recorded attempts; a pod without one is named on stderr.
func TestExplainSelectorJSON(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	alice := kubeconfig(t, fakeAPIServer(t), "alice", "shop")
	code, out, errOut := run(t, "explain", "-l", "app=shop", "-o", "json", "--kubeconfig", alice, "--sidecar-url", srv.URL, "--cache-dir", t.TempDir())
	if code != ExitPending {
		t.Fatalf("exit code %d, want %d; stderr %s", code, ExitPending, errOut)
	}
	var list v1alpha1.AttemptList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	var got []string
	for _, a := range list.Items {
		got = append(got, a.Pod.Name+" "+string(a.Result))
	}
	if diff := cmp.Diff([]string{"db unschedulable", "web scheduled"}, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if want := "warning: no attempt recorded for fresh\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// TestSelectionErrors: a bad selector, a bad --sort-by, a workload explain
// cannot take and a workload without pods are clear errors with their exit
// codes; explain of an unrecorded pod names its spec.schedulerName.
func TestSelectionErrors(t *testing.T) {
	srv := httptest.NewServer(sidecar(t))
	defer srv.Close()
	alice := kubeconfig(t, fakeAPIServer(t), "alice", "shop")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantErrOut string
	}{
		{name: "bad selector", args: []string{"pending", "-l", "app=(shop"}, wantCode: ExitUsage, wantErrOut: `--selector "app=(shop"`},
		{name: "bad sort path", args: []string{"pending", "--sort-by", "{.pod.name"}, wantCode: ExitUsage, wantErrOut: `--sort-by "{.pod.name"`},
		{name: "sort by a missing field", args: []string{"history", "-l", "app=shop", "--sort-by", ".nothing"}, wantCode: ExitUsage,
			wantErrOut: `--sort-by ".nothing": couldn't find any field with path "{.nothing}" in the list of objects`},
		{name: "sort by a list", args: []string{"history", "-l", "app=shop", "--sort-by", ".reasons"}, wantCode: ExitUsage,
			wantErrOut: `--sort-by ".reasons" selects a list or an object, not a value to sort by`},
		{name: "sort one pod", args: []string{"explain", "pod/web", "--sort-by", ".pod.name"}, wantCode: ExitUsage, wantErrOut: "--sort-by sorts the pods of a workload or of -l"},
		{name: "pod and selector", args: []string{"explain", "pod/web", "-l", "app=shop"}, wantCode: ExitUsage, wantErrOut: "not both"},
		{name: "node of a workload", args: []string{"explain", "deploy/shop", "--node", "a"}, wantCode: ExitUsage, wantErrOut: "explain one pod: not with deploy/shop"},
		{name: "not a workload", args: []string{"explain", "svc/front"}, wantCode: ExitUsage, wantErrOut: "a Service is not a workload explain takes"},
		{name: "unknown workload", args: []string{"explain", "sts/nothing"}, wantCode: ExitFailure, wantErrOut: "reading sts/nothing"},
		{name: "workload without pods", args: []string{"explain", "job/train"}, wantCode: ExitNotFound, wantErrOut: `no pods of job.batch/train in namespace shop: none matches selector "job-name=train"`},
		{name: "selector without pods", args: []string{"history", "-l", "app=none"}, wantCode: ExitNotFound, wantErrOut: `no attempts recorded for the 0 pods of selector "app=none" in namespace shop`},
		{name: "pod of another scheduler", args: []string{"explain", "pod/fresh"}, wantCode: ExitNotFound,
			wantErrOut: `no attempts recorded for pod shop/fresh: its spec.schedulerName is "default-scheduler", and schedscope records only the pods whose spec.schedulerName is one of its scheduler's profiles`},
		{name: "no such pod", args: []string{"explain", "pod/nope"}, wantCode: ExitNotFound, wantErrOut: "no attempts recorded for pod shop/nope, and the cluster has no pod shop/nope\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append(tt.args, "--kubeconfig", alice, "--sidecar-url", srv.URL, "--cache-dir", t.TempDir())...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErrOut) {
				t.Errorf("exit code %d, stderr %q; want %d and %q; stdout %s", code, errOut, tt.wantCode, tt.wantErrOut, out)
			}
		})
	}
}

// Package docs checks that the operator documentation names only flags
// and metrics that exist, and that the runbooks are those of the alerts.
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/schedscope/schedscope/test/framework"
)

// operatorDocs are the documents whose commands and metrics an operator
// follows by hand.
var operatorDocs = []string{"docs/architecture.md", "docs/scheduler.md", "docs/troubleshooting.md", "docs/upgrade.md", "docs/tracing.md", "docs/deploy.md", "docs/runbooks.md", "docs/shadow.md"}

var (
	flagRE = regexp.MustCompile(`--([a-z0-9][a-z0-9-]*)`)
	// A name followed by .go is a Go file's (kube_v1_35.go), not a metric's.
	metricRE = regexp.MustCompile(`\b(schedscope_[a-z0-9_]+|scheduler_[a-z0-9_]+|aggregator_[a-z0-9_]+|kube_[a-z0-9_]+)\b(\.go)?`)
)

// kubectlFlags are the kubectl flags the documents' commands use.
var kubectlFlags = []string{"as", "field-selector", "previous", "raw", "show-labels", "insecure-skip-tls-verify"}

// upstreamMetrics are the metrics of other components the documents name:
// kube-scheduler's (which schedscope-scheduler serves), the kube-apiserver's
// aggregator's, kube-state-metrics' and /metrics/resources'.
var upstreamMetrics = []string{
	"scheduler_pending_pods", "aggregator_unavailable_apiservice", "aggregator_unavailable_apiservice_total",
	"kube_pod_resource_request", "scheduler_scheduling_algorithm_duration_seconds",
}

// TestOperatorDocsNameRealFlags: every --flag in the operator documents is
// one of schedscope-scheduler's, schedscope-sidecar's, kubectl
// schedscope's, kube-apiserver's or helm's (the chart's commands), as
// their --help lists them, or one of
// the few kubectl flags of the documents' commands.
func TestOperatorDocsNameRealFlags(t *testing.T) {
	known := map[string]bool{}
	for _, f := range kubectlFlags {
		known[f] = true
	}
	for _, cmd := range [][]string{
		{"schedscope-scheduler", "--help"},
		{"schedscope-sidecar", "--help"},
		{"kubectl-schedscope", "explain", "--help"},
		{"kubectl-schedscope", "pending", "--help"},
		{"kubectl-schedscope", "shadow", "--help"},
		{"kube-apiserver", "--help"},
		{"helm", "install", "--help"},
		{"helm", "upgrade", "--help"},
		{"helm", "template", "--help"},
		{"helm", "lint", "--help"},
		{"helm", "test", "--help"},
	} {
		bin, err := framework.Binary(cmd[0])
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, cmd[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
		for _, m := range flagRE.FindAllStringSubmatch(string(out), -1) {
			known[m[1]] = true
		}
	}
	for _, doc := range operatorDocs {
		for _, m := range flagRE.FindAllStringSubmatch(readDoc(t, doc), -1) {
			if !known[m[1]] {
				t.Errorf("%s names --%s, which no binary has", doc, m[1])
			}
		}
	}
}

// TestOperatorDocsNameRealMetrics: every metric the operator documents
// name is in the metric tables of docs/scheduler.md or docs/sidecar.md
// (which tests keep in step with the code), or one of upstream's.
func TestOperatorDocsNameRealMetrics(t *testing.T) {
	tables := readDoc(t, "docs/scheduler.md") + readDoc(t, "docs/sidecar.md")
	upstream := map[string]bool{}
	for _, m := range upstreamMetrics {
		upstream[m] = true
	}
	for _, doc := range operatorDocs {
		for _, m := range metricRE.FindAllStringSubmatch(readDoc(t, doc), -1) {
			name := m[1]
			if m[2] != "" || name == "scheduler_perf" { // a Go file, upstream's benchmark harness
				continue
			}
			if !upstream[name] && !strings.Contains(tables, "| `"+name+"` |") {
				t.Errorf("%s names the metric %s, which no metric table has", doc, name)
			}
		}
	}
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

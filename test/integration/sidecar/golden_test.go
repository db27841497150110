package sidecar

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestPluginGolden from this run's output")

// TestPluginGolden runs kubectl schedscope's commands, in their formats, on
// the records the real scheduler wrote for a scheduled and an unschedulable
// pod, and compares each output with its golden file in testdata/golden
// (-update rewrites them). What differs from run to run (UIDs, trace IDs,
// times, durations, ages) is masked first.
func TestPluginGolden(t *testing.T) {
	const ns = "golden"
	createNamespace(t, ns)
	createNode(t, "gold-big", "8")
	createNode(t, "gold-mid", "7")
	createNode(t, "gold-small", "1")
	createNode(t, "gold-tainted", "8", v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule})
	// web first, so that its binding cannot requeue huge into a second attempt.
	hintPod(t, ns, "web", "2", nil)
	waitBound(t, ns, "web")
	waitForExplanation(t, ns, "web", "scheduled")
	hintPod(t, ns, "huge", "16", nil)
	waitForHints(t, ns, "huge")

	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"explain-unschedulable.txt", []string{"explain", "pod/huge"}},
		{"explain-unschedulable-wide.txt", []string{"explain", "pod/huge", "-o", "wide"}},
		{"explain-scheduled-wide-all-nodes.txt", []string{"explain", "pod/web", "-o", "wide", "--all-nodes"}},
		{"explain-rejected.txt", []string{"explain", "pod/web", "--verdict", "rejected"}},
		{"explain-jsonpath.txt", []string{"explain", "pod/web", "-o", "jsonpath={.selectedNode} {.groups[*].plugin}"}},
		{"history.txt", []string{"history", "pod/huge"}},
		{"pending.txt", []string{"pending"}},
		{"pending-name.txt", []string{"pending", "-o", "name"}},
		{"pending-custom-columns.txt", []string{"pending", "--no-headers", "-o", "custom-columns=POD:.pod.name,RESULT:.latest.result,REJECTED BY:.latest.reasons[*].plugin"}},
		{"top-plugins.txt", []string{"top", "plugins"}},
		{"top-nodes.txt", []string{"top", "nodes", "-o", "wide"}},
	} {
		t.Run(strings.TrimSuffix(tt.golden, ".txt"), func(t *testing.T) {
			args := append(tt.args, "-n", ns, "--sidecar-url", sidecar.URL, "--insecure-skip-tls-verify")
			_, out := runPlugin(t, cp.Kubeconfig, args...)
			got := "$ kubectl schedscope " + strings.Join(tt.args, " ") + "\n" + maskVarying(out)
			path := filepath.Join("testdata", "golden", tt.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestPluginGolden -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("kubectl schedscope %s (-%s +got):\n%s", strings.Join(tt.args, " "), path, diff)
			}
		})
	}
}

// varying matches what differs between runs of the same scenario, each
// with its mask.
var varying = []struct {
	re   *regexp.Regexp
	mask string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uid>"},
	{regexp.MustCompile(`\b[0-9a-f]{32}\b`), "<trace-id>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"},
	// Not a bare 3500m, which is a quantity of cpu.
	{regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|us|ms|s)\b`), "<duration>"},
}

// maskVarying masks what varies between runs, and the spaces that pad the
// masked columns of a table.
func maskVarying(out string) string {
	for _, v := range varying {
		out = v.re.ReplaceAllString(out, v.mask)
	}
	return regexp.MustCompile(` {2,}`).ReplaceAllString(out, "  ")
}

// Package localstack tests `make run`: it builds hack/localstack and runs
// its smoke mode, which starts the whole stack on loopback, runs the demo,
// checks every outcome and stops everything.
package localstack

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedscope/schedscope/test/framework"
)

func TestSmoke(t *testing.T) {
	root := framework.RepoRoot()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "localstack")
	build := exec.Command("go", "build", "-o", bin, "./hack/localstack")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./hack/localstack: %v\n%s", err, out)
	}

	state := filepath.Join(tmp, "state")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-smoke", "-state-dir", state, "-keep-state")
	cmd.Dir = root
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("localstack -smoke took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("localstack -smoke: %v (logs in %s)", err, state)
	}
	for _, want := range []string{
		"too-big ", "unschedulable",
		"checking the sidecar's explanation of every demo pod done",
		"the kube-apiserver serves the explain API",
		"exit code 3, rejected by NodeResourcesFit",
		"/apis/schedscope.io/v1alpha1/ui/ answers 200",
		"no process left",
		"smoke test passed",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output has no %q", want)
		}
	}
	// Check from the outside too that nothing it started runs on.
	if left := processesWithEnv("SCHEDSCOPE_LOCALSTACK_DIR=" + state); len(left) > 0 {
		t.Errorf("processes of the stack still running: %v", left)
	}
}

// processesWithEnv returns the command lines of running processes whose
// environment holds entry.
func processesWithEnv(entry string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == entry {
				cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				found = append(found, e.Name()+": "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
				break
			}
		}
	}
	return found
}

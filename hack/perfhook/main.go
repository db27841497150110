// Command perfhook gives Kubernetes v1.35's scheduler_perf the one hook the
// compatibility suite needs and v1.35 lacks: a function called with each
// scheduler RunIntegrationPerfScheduling starts, before its workload runs
// (from v1.36 on the harness has WithNodeUpdateFn). It copies the minor's
// k8s.io/kubernetes module out of the module cache, which it leaves as it
// is, into the user's cache directory (a path that stays the same, so the
// build cache keeps what it compiled), adds to the copy's scheduler_perf.go
// the hook's call and a file that sets it, and writes a module file that
// replaces k8s.io/kubernetes with the copy.
//
//	go run ./hack/perfhook -modfile kube/1.35.mod -out _output/compat-1.35/perfhook
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// startedAnchor is the line of RunIntegrationPerfScheduling, in v1.35,
// that starts a workload's scheduler; the hook's call follows it.
const startedAnchor = "\t\t\t\t\tscheduler, informerFactory, tCtx := setupTestCase(t, tc, featureGates, nil)\n"

const startedCall = `					if startedSchedulerFn != nil {
						if err := startedSchedulerFn(tCtx, scheduler); err != nil {
							tCtx.Fatalf("started scheduler hook: %v", err)
						}
					}
`

const hookFile = `package benchmark

import (
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// StartedSchedulerFn is called with each scheduler RunIntegrationPerfScheduling
// starts, before its workload runs.
type StartedSchedulerFn func(tCtx ktesting.TContext, sched *scheduler.Scheduler) error

var startedSchedulerFn StartedSchedulerFn

// SetStartedSchedulerFn sets the function RunIntegrationPerfScheduling calls
// with each scheduler it starts; nil: none.
func SetStartedSchedulerFn(fn StartedSchedulerFn) { startedSchedulerFn = fn }
`

func main() {
	modfile := flag.String("modfile", "", "the module file of the minor whose scheduler_perf gets the hook")
	out := flag.String("out", "", "directory the module file (kube.mod, kube.sum) that builds with the copy is written to")
	flag.Parse()
	if *modfile == "" || *out == "" {
		log.Fatal("-modfile and -out are required")
	}
	if err := run(*modfile, *out); err != nil {
		log.Fatal(err)
	}
}

func run(modfile, out string) error {
	list := exec.Command("go", "list", "-modfile="+modfile, "-m", "-f", "{{.Dir}} {{.Version}}", "k8s.io/kubernetes")
	list.Stderr = os.Stderr
	listed, err := list.Output()
	if err != nil {
		return fmt.Errorf("locating k8s.io/kubernetes: %w", err)
	}
	dir, release, _ := strings.Cut(strings.TrimSpace(string(listed)), " ")
	cache, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	hooked := filepath.Join(cache, "schedscope", "kubernetes@"+release+"-perfhook")
	if err := copyHooked(dir, hooked); err != nil {
		return err
	}
	mod, err := os.ReadFile(modfile)
	if err != nil {
		return err
	}
	replaced := "replace k8s.io/kubernetes => k8s.io/kubernetes " + release + "\n"
	if !bytes.Contains(mod, []byte(replaced)) {
		return fmt.Errorf("%s has no line %q", modfile, strings.TrimSpace(replaced))
	}
	mod = bytes.Replace(mod, []byte(replaced), []byte("replace k8s.io/kubernetes => "+hooked+"\n"), 1)
	sum, err := os.ReadFile(strings.TrimSuffix(modfile, ".mod") + ".sum")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "kube.mod"), mod, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "kube.sum"), sum, 0o644)
}

// copyHooked makes hooked a copy of the module in dir with the hook, unless
// it is one already (its hook file is written last).
func copyHooked(dir, hooked string) error {
	perf := filepath.Join(hooked, "test", "integration", "scheduler_perf")
	hookPath := filepath.Join(perf, "started_scheduler.go")
	if _, err := os.Stat(hookPath); err == nil {
		return nil
	}
	if err := os.RemoveAll(hooked); err != nil {
		return err
	}
	if err := os.CopyFS(hooked, os.DirFS(dir)); err != nil {
		return fmt.Errorf("copying %s: %w", dir, err)
	}
	// The module cache's files are read-only, and so are their copies.
	if err := filepath.WalkDir(hooked, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	}); err != nil {
		return err
	}
	source := filepath.Join(perf, "scheduler_perf.go")
	src, err := os.ReadFile(source)
	if err != nil {
		return err
	}
	if n := bytes.Count(src, []byte(startedAnchor)); n != 1 {
		return fmt.Errorf("%s: the line that starts a workload's scheduler in RunIntegrationPerfScheduling occurs %d times, want once: the hook is for v1.35's harness", source, n)
	}
	patched := bytes.Replace(src, []byte(startedAnchor), []byte(startedAnchor+startedCall), 1)
	if err := os.WriteFile(source, patched, 0o644); err != nil {
		return err
	}
	return os.WriteFile(hookPath, []byte(hookFile), 0o644)
}

// Command perfhook writes a go build overlay (go help build, -overlay) that
// gives Kubernetes v1.35's scheduler_perf the one hook the compatibility
// suite needs and v1.35 lacks: a function called with each scheduler
// RunIntegrationPerfScheduling starts, before its workload runs. From
// v1.36 on the harness has it (WithNodeUpdateFn). The overlay replaces
// scheduler_perf.go with a copy that calls the hook and adds a file that
// sets it; the module cache is left as it is.
//
//	go run ./hack/perfhook -modfile kube/1.35.mod -out _output/perfhook-1.35
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const perfPackage = "k8s.io/kubernetes/test/integration/scheduler_perf"

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
	modfile := flag.String("modfile", "", "the module file of the minor whose scheduler_perf the overlay patches")
	out := flag.String("out", "", "directory the overlay (overlay.json) and its files are written to")
	flag.Parse()
	if *modfile == "" || *out == "" {
		log.Fatal("-modfile and -out are required")
	}
	if err := run(*modfile, *out); err != nil {
		log.Fatal(err)
	}
}

func run(modfile, out string) error {
	list := exec.Command("go", "list", "-modfile="+modfile, "-f", "{{.Dir}}", perfPackage)
	list.Stderr = os.Stderr
	dirOut, err := list.Output()
	if err != nil {
		return fmt.Errorf("locating %s: %w", perfPackage, err)
	}
	dir := strings.TrimSpace(string(dirOut))
	upstream := filepath.Join(dir, "scheduler_perf.go")
	src, err := os.ReadFile(upstream)
	if err != nil {
		return err
	}
	if n := bytes.Count(src, []byte(startedAnchor)); n != 1 {
		return fmt.Errorf("%s: the line that starts a workload's scheduler in RunIntegrationPerfScheduling occurs %d times, want once: this overlay is for v1.35's harness", upstream, n)
	}
	patched := bytes.Replace(src, []byte(startedAnchor), []byte(startedAnchor+startedCall), 1)
	out, err = filepath.Abs(out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		upstream: filepath.Join(out, "scheduler_perf.go"),
		filepath.Join(dir, "started_scheduler.go"): filepath.Join(out, "started_scheduler.go"),
	}
	if err := os.WriteFile(files[upstream], patched, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "started_scheduler.go"), []byte(hookFile), 0o644); err != nil {
		return err
	}
	overlay, err := json.MarshalIndent(map[string]any{"Replace": files}, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "overlay.json"), overlay, 0o644)
}

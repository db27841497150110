// Command localstack runs schedscope on this machine with nothing but the
// binaries in bin/: etcd, kube-apiserver, schedscope-scheduler with the
// profiles of config/scheduler-two-profiles.yaml (the bin-packing profile
// a shadow of the other), the sidecar, and Jaeger when bin/jaeger exists,
// all on 127.0.0.1. As the chart does, it registers the sidecar's explain
// API with the kube-apiserver (the APIService v1alpha1.schedscope.io), so
// that kubectl schedscope works with the stack's kubeconfig. It registers
// a demo cluster of Node objects, submits a demo workload that exercises
// every kind of scheduling constraint, and prints where to look. Ctrl-C
// stops everything it started.
//
//	go run ./hack/localstack          # `make run`
//	go run ./hack/localstack -smoke   # run the demo, check every outcome, stop
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	var o options
	flag.BoolVar(&o.smoke, "smoke", false, "Run the demo, check that every demo pod got its expected outcome, that the sidecar explains it, that kubectl and kubectl schedscope (explain, ui) reach the explain API through the kube-apiserver and (with Jaeger) that the unschedulable pod was traced; then stop everything and exit non-zero on any failure.")
	flag.StringVar(&o.stateDir, "state-dir", "", "Directory for logs, certificates, the etcd data and the sidecar database (default: a new temporary directory).")
	flag.BoolVar(&o.keepState, "keep-state", false, "Keep the state directory on exit (it is always kept when the smoke test fails).")
	flag.BoolVar(&o.noJaeger, "no-jaeger", false, "Do not start Jaeger even if bin/jaeger exists.")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "How long the demo may take to reach its expected outcomes (and, with -smoke, the whole check).")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "localstack takes no arguments, got %q\n", flag.Args())
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	s, err := newStack(o, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "localstack: %v\n", err)
		return 1
	}
	failed := s.runAll(ctx)
	return failed
}

// options are the command's flags.
type options struct {
	smoke     bool
	stateDir  string
	keepState bool
	noJaeger  bool
	timeout   time.Duration
}

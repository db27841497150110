package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

type options struct {
	out          string
	benchstat    string
	count        int
	processCount int
	profiles     string
	only         string
	parts        string
	smoke        bool
	doc          string
	reportOnly   bool
	compareOnly  bool
	shadow       bool
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "_output/bench", "directory for the results")
	flag.StringVar(&o.benchstat, "benchstat", "bin/benchstat", "the benchstat binary (make build-tools builds it)")
	flag.IntVar(&o.count, "count", 6, "runs of each workload in each mode (benchstat gives a confidence interval from 6 on)")
	flag.IntVar(&o.processCount, "process-count", 3, "runs of each workload in each mode with the scheduler in its own process (the 20000-node workload runs once)")
	flag.StringVar(&o.profiles, "process-profiles", "", "a directory to save each scheduler process's heap and CPU profiles in, taken when half its measured pods are bound (the CPU profile's 10 seconds are in the run's CPU time); none if empty")
	flag.StringVar(&o.only, "workload", "", "run only the workloads whose name contains this")
	flag.StringVar(&o.parts, "parts", "perf,process,micro", "comma-separated parts to run: perf (scheduler_perf, in one process), process (the scheduler in its own process), micro (the micro-benchmarks)")
	flag.BoolVar(&o.smoke, "smoke", false, "run the smallest workload once in each mode, and the process benchmark on 50 nodes, requiring every attempt recorded and read back, and skip the micro-benchmarks")
	flag.StringVar(&o.doc, "doc", "", "the performance page whose results (between its markers) to replace by this run's; none if empty")
	flag.BoolVar(&o.reportOnly, "report-only", false, "measure nothing: write the results of the run whose output is in -out to -doc")
	flag.BoolVar(&o.compareOnly, "compare-only", false, "with -shadow, run nothing: compare the runs of the last -shadow run in -out (process.jsonl) again, rewrite its report and write it to -doc")
	flag.BoolVar(&o.shadow, "shadow", false, "measure what a shadow profile costs instead: "+shadowWorkload.name+" with the scheduler in its own process, recording without a shadow against the bin-packing shadow run for every attempt (shadow) and for every tenth (shadow-10); -doc is the shadow page, whose shadow results it replaces")
	flag.Parse()
	if o.shadow {
		o.parts = "process"
	}
	if err := o.Validate(); err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	run := o.Run
	switch {
	case o.reportOnly:
		run = func(context.Context) error { return writePage(o.out, o.doc, o.part()) }
	case o.compareOnly:
		run = o.compareAgain
	}
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func (o *options) Validate() error {
	if o.count < 1 || o.processCount < 1 {
		return fmt.Errorf("-count=%d, -process-count=%d: want at least 1", o.count, o.processCount)
	}
	for _, p := range strings.Split(o.parts, ",") {
		if p != "perf" && p != "process" && p != "micro" {
			return fmt.Errorf("-parts=%q: %q is none of perf, process and micro", o.parts, p)
		}
	}
	if o.compareOnly && (!o.shadow || o.reportOnly) {
		return fmt.Errorf("-compare-only needs -shadow, without -report-only: it compares the runs of the last -shadow run again")
	}
	if o.smoke && o.shadow {
		return fmt.Errorf("-smoke with -shadow: the smoke run checks the benchmark's own modes")
	}
	if o.smoke && o.doc != "" {
		return fmt.Errorf("-smoke with -doc=%q: a smoke run writes only to -out", o.doc)
	}
	if o.reportOnly && o.doc == "" {
		return fmt.Errorf("-report-only without -doc: nothing to write")
	}
	if o.doc != "" {
		if err := o.part().Check(o.doc); err != nil {
			return fmt.Errorf("-doc: %w", err)
		}
	}
	if o.reportOnly {
		return nil
	}
	if _, err := exec.LookPath(o.benchstat); err != nil {
		return fmt.Errorf("-benchstat: %w (make build-tools builds it)", err)
	}
	return nil
}

// Run builds the benchmark, measures, and reports; with -doc it writes
// the results to the page.
func (o *options) Run(ctx context.Context) error {
	env, err := currentEnvironment(ctx, time.Now())
	if err != nil {
		return err
	}
	env.Parts, env.Workload, env.Count, env.ProcessCount = o.parts, o.only, o.count, o.processCount
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	raw, err := os.Create(filepath.Join(o.out, "results.txt"))
	if err != nil {
		return err
	}
	defer raw.Close()
	report, err := os.Create(filepath.Join(o.out, reportFile))
	if err != nil {
		return err
	}
	defer report.Close()
	table := io.MultiWriter(os.Stdout, raw, report)
	var peak float64
	if o.runs("perf") {
		binary := filepath.Join(o.out, "bench.test")
		if err := command(ctx, raw, "go", "test", "-c", "-o", binary, "./test/bench"); err != nil {
			return fmt.Errorf("building the benchmark: %w", err)
		}
		perf := filepath.Join(o.out, "perf.txt")
		s, err := o.measure(ctx, raw, binary, perf)
		if err != nil {
			return err
		}
		if err := compare(ctx, table, o.benchstat, perf); err != nil {
			return err
		}
		s.printRecords(table)
		peak = s.peak
	}
	if o.runs("process") {
		processFile := filepath.Join(o.out, "process.txt")
		runs, err := o.measureProcesses(ctx, raw, processFile)
		if err != nil {
			return err
		}
		c := againstPlain
		if o.shadow {
			c = againstNoShadow
		}
		if err := compareProcesses(ctx, table, o.benchstat, processFile, runs, c); err != nil {
			return err
		}
	}
	if !o.smoke && o.runs("micro") {
		if err := micro(ctx, table, raw, filepath.Join(o.out, "micro.txt"), peak); err != nil {
			return err
		}
	}
	if err := report.Close(); err != nil {
		return err
	}
	env.Finished = time.Now().UTC()
	if err := writeEnvironment(filepath.Join(o.out, environmentFile), env); err != nil {
		return err
	}
	log.Printf("results in %s", o.out)
	if o.doc == "" {
		return nil
	}
	return writePage(o.out, o.doc, o.part())
}

// compareAgain compares the runs of the last -shadow run in -out again,
// rewrites its report (the run's environment and raw output stay) and,
// with -doc, writes it to the page.
func (o *options) compareAgain(ctx context.Context) error {
	processFile := filepath.Join(o.out, "process.txt")
	runs, err := writeProcessFile(filepath.Join(o.out, "process.jsonl"), processFile)
	if err != nil {
		return err
	}
	report, err := os.Create(filepath.Join(o.out, reportFile))
	if err != nil {
		return err
	}
	defer report.Close()
	if err := compareProcesses(ctx, io.MultiWriter(os.Stdout, report), o.benchstat, processFile, runs, againstNoShadow); err != nil {
		return err
	}
	if err := report.Close(); err != nil || o.doc == "" {
		return err
	}
	return writePage(o.out, o.doc, o.part())
}

// runs reports whether part is to be run.
func (o *options) runs(part string) bool { return slices.Contains(strings.Split(o.parts, ","), part) }

func command(ctx context.Context, out io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	return cmd.Run()
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// compare prints benchstat's tables of perf: every mode against plain,
// then the collector modes against recording, tracing off.
func compare(ctx context.Context, w io.Writer, benchstat, perf string) error {
	fmt.Fprintln(w, "\nEach mode against plain kube-scheduler: throughput, the scheduler's average time per scheduled attempt (scheduler_scheduling_attempt_duration_seconds, from popping the pod to its binding), peak heap (in-process kube-apiserver included) and the benchmark process's CPU time")
	if err := command(ctx, w, benchstat, "-col", "/mode", perf); err != nil {
		return fmt.Errorf("benchstat: %w", err)
	}
	fmt.Fprintln(w, "\nThe collector modes against recording (tracing off)")
	if err := command(ctx, w, benchstat, "-col", "/mode@(recording collector-down collector-slow)", perf); err != nil {
		return fmt.Errorf("benchstat: %w", err)
	}
	return nil
}

// printRecords prints the attempts recorded and lost in the observed
// modes of each workload.
func (s *summary) printRecords(w io.Writer) {
	fmt.Fprintln(w, "\nRecords written in the observed modes, and lost (not read back from the record stream, or dropped)")
	for _, name := range s.workloads {
		fmt.Fprintf(w, "%s: %d written, %d lost\n", name, s.records[name], s.lost[name])
	}
}

// micro runs the recorder and tracer micro-benchmarks, the sidecar's
// ingest benchmarks (follower to SQLite; SQLite against PostgreSQL) and
// the API's latency at scale, printing their output to table and saving it to
// microFile (for benchstat against another checkout's), and compares the
// ingest rate with the scheduler's peak throughput.
func micro(ctx context.Context, table, raw io.Writer, microFile string, peak float64) error {
	f, err := os.Create(microFile)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintln(table, "\nRecorder and tracer micro-benchmarks (per node-plugin call; per 5000-node record built, encoded, added to the stream's buffer and observed into the metrics; per attempt traced; all but the first off the scheduling path):")
	// -p 1: go test would otherwise run two packages' benchmarks at once,
	// each taking the other's core.
	bench := exec.CommandContext(ctx, "go", "test", "-p", "1", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", "2s",
		"./pkg/scheduler/observe/...", "./pkg/record", "./pkg/stream", "./pkg/scheduler/metrics", "./pkg/scheduler/tracing")
	bench.Stdout, bench.Stderr = io.MultiWriter(table, f), raw
	if err := bench.Run(); err != nil {
		return fmt.Errorf("micro-benchmarks: %w", err)
	}

	fmt.Fprintln(table, "\nSidecar ingest of 5000-node records, stream to SQLite (BenchmarkFollow):")
	var ingest bytes.Buffer
	follow := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "BenchmarkFollow", "-benchtime", "2000x", "./pkg/sidecar/follow")
	follow.Stdout, follow.Stderr = io.MultiWriter(table, f, &ingest), raw
	if err := follow.Run(); err != nil {
		return fmt.Errorf("ingest benchmark: %w", err)
	}
	fmt.Fprintln(table, "\nStore ingest of 5000-node records, SQLite against PostgreSQL written by 1 and 3 sidecars at once (BenchmarkIngest):")
	stores := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "BenchmarkIngest", "-benchtime", "1000x", "./pkg/sidecar/store/postgres")
	stores.Stdout, stores.Stderr = io.MultiWriter(table, f, &ingest), raw
	if err := stores.Run(); err != nil {
		return fmt.Errorf("store ingest benchmark: %w", err)
	}
	fmt.Fprintln(table, "\nThe API's latency at a million stored attempts, SQLite against PostgreSQL (BenchmarkAPIAtScale):")
	api := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "BenchmarkAPIAtScale", "-benchtime", "500x", "-timeout", "60m", "./pkg/sidecar/store/postgres")
	api.Stdout, api.Stderr = io.MultiWriter(table, f), raw
	if err := api.Run(); err != nil {
		return fmt.Errorf("API benchmark: %w", err)
	}
	if peak > 0 {
		rates := recordsPerSecond(ingest.String())
		for _, name := range slices.Sorted(maps.Keys(rates)) {
			rate := rates[name]
			fmt.Fprintf(table, "%s: %.0f records/s, %.2f times the scheduler's peak of %.1f pods/s at 5000 nodes (best run above)\n", name, rate, rate/peak, peak)
		}
	}
	return f.Close()
}

// recordsPerSecond reads the records/s of each benchmark in go test output.
func recordsPerSecond(out string) map[string]float64 {
	rates := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		for i := 1; i < len(fields); i++ {
			if fields[i] == "records/s" {
				if v, err := strconv.ParseFloat(fields[i-1], 64); err == nil {
					rates[fields[0]] = v
				}
			}
		}
	}
	return rates
}

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

// section is a part of the report: the line that introduces it in
// benchstat.txt, and its heading on the performance page.
type section struct{ title, heading string }

// The report's sections.
var (
	perfAgainstPlain = section{
		"Each mode against plain kube-scheduler: throughput, the scheduler's average time per scheduled attempt (scheduler_scheduling_attempt_duration_seconds, from popping the pod to its binding), peak heap (in-process kube-apiserver included) and the benchmark process's CPU time",
		"scheduler_perf, in one process: each mode against plain",
	}
	perfAgainstRecording = section{
		"The collector modes against recording (tracing off)",
		"scheduler_perf: the collector modes against recording",
	}
	perfRecords = section{
		"Records written in the observed modes, and lost (not read back from the record stream, or dropped)",
		"scheduler_perf: records written and lost",
	}
	processAgainstPlain = section{
		"Each scheduler in its own process (test/bench TestProcessCost), each mode against plain kube-scheduler: throughput, the scheduler process's CPU time (user and system, /proc/<pid>/stat) per measured pod from its readiness until its work on them was done, and its peak RSS (VmHWM); the sidecar and the OTLP receiver run in processes of their own, not counted",
		"Each scheduler in its own process: each mode against plain",
	}
	processRatios = section{
		"The same runs as ratios to plain kube-scheduler: median [lowest, highest] over the runs, and of the ratios of the runs of one round",
		"Each scheduler in its own process: ratios to plain, round by round",
	}
	processOthers = section{
		"The other processes of the observed modes, medians: the sidecar following the record stream into SQLite, the OTLP receiver counting spans (CPU time over their whole life)",
		"Each scheduler in its own process: the sidecar and the OTLP receiver",
	}
	shadowAgainstNone = section{
		"Each scheduler in its own process (test/bench TestProcessCost), the shadow modes against recording without a shadow: throughput, the scheduler process's CPU time (user and system, /proc/<pid>/stat) per measured pod from its readiness until its work on them was done, and its peak RSS (VmHWM)",
		"Shadow profiles: each mode against no shadow",
	}
	shadowRatios = section{
		"The same runs as ratios to recording without a shadow, with the scheduling algorithm's median and 99th percentile durations, a shadow's run included (scheduler_scheduling_algorithm_duration_seconds): median [lowest, highest] over the runs, and of the ratios of the runs of one round",
		"Shadow profiles: ratios to no shadow, round by round",
	}
	microRecorder = section{
		"Recorder and tracer micro-benchmarks (per node-plugin call; per 5000-node record built, encoded, added to the stream's buffer and observed into the metrics; per attempt traced; all but the first off the scheduling path):",
		"Recorder and tracer micro-benchmarks",
	}
	microFollow = section{
		"Sidecar ingest of 5000-node records, stream to SQLite (BenchmarkFollow):",
		"Sidecar ingest, stream to SQLite",
	}
	microStores = section{
		"Store ingest of 5000-node records, SQLite against PostgreSQL written by 1 and 3 sidecars at once (BenchmarkIngest):",
		"Store ingest, SQLite against PostgreSQL",
	}
	microAPI = section{
		"The API's latency at a million stored attempts, SQLite against PostgreSQL (BenchmarkAPIAtScale):",
		"The API at a million stored attempts",
	}
	microIngestAgainstPeak = section{
		"Ingest rates against the scheduler's peak throughput at 5000 nodes:",
		"Ingest against the scheduler's peak",
	}
)

// sections are the report's sections in the order it prints them, and
// shadowSections those of a -shadow run's report.
var (
	shadowSections = []section{shadowAgainstNone, shadowRatios, processOthers}
	sections       = []section{
		perfAgainstPlain, perfAgainstRecording, perfRecords,
		processAgainstPlain, processRatios, processOthers,
		microRecorder, microFollow, microStores, microAPI, microIngestAgainstPeak,
	}
)

// start prints the line that introduces the section, after an empty line.
func (s section) start(w io.Writer) { fmt.Fprintln(w, "\n"+s.title) }

// compare prints benchstat's tables of perf: every mode against plain,
// then the collector modes against recording, tracing off.
func compare(ctx context.Context, w io.Writer, benchstat, perf string) error {
	perfAgainstPlain.start(w)
	if err := command(ctx, w, benchstat, "-col", "/mode", perf); err != nil {
		return fmt.Errorf("benchstat: %w", err)
	}
	perfAgainstRecording.start(w)
	if err := command(ctx, w, benchstat, "-col", "/mode@(recording collector-down collector-slow)", perf); err != nil {
		return fmt.Errorf("benchstat: %w", err)
	}
	return nil
}

// printRecords prints the attempts recorded and lost in the observed
// modes of each workload.
func (s *summary) printRecords(w io.Writer) {
	perfRecords.start(w)
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
	microRecorder.start(table)
	// -p 1: go test would otherwise run two packages' benchmarks at once,
	// each taking the other's core.
	bench := exec.CommandContext(ctx, "go", "test", "-p", "1", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", "2s",
		"./pkg/scheduler/observe/...", "./pkg/record", "./pkg/stream", "./pkg/scheduler/metrics", "./pkg/scheduler/tracing")
	bench.Stdout, bench.Stderr = io.MultiWriter(table, f), raw
	if err := bench.Run(); err != nil {
		return fmt.Errorf("micro-benchmarks: %w", err)
	}

	microFollow.start(table)
	var ingest bytes.Buffer
	follow := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "BenchmarkFollow", "-benchtime", "2000x", "./pkg/sidecar/follow")
	follow.Stdout, follow.Stderr = io.MultiWriter(table, f, &ingest), raw
	if err := follow.Run(); err != nil {
		return fmt.Errorf("ingest benchmark: %w", err)
	}
	microStores.start(table)
	stores := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "BenchmarkIngest", "-benchtime", "1000x", "./pkg/sidecar/store/postgres")
	stores.Stdout, stores.Stderr = io.MultiWriter(table, f, &ingest), raw
	if err := stores.Run(); err != nil {
		return fmt.Errorf("store ingest benchmark: %w", err)
	}
	microAPI.start(table)
	api := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "BenchmarkAPIAtScale", "-benchtime", "500x", "-timeout", "60m", "./pkg/sidecar/store/postgres")
	api.Stdout, api.Stderr = io.MultiWriter(table, f), raw
	if err := api.Run(); err != nil {
		return fmt.Errorf("API benchmark: %w", err)
	}
	if peak > 0 {
		microIngestAgainstPeak.start(table)
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

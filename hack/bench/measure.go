package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var modes = []string{"plain", "recording", "tracing", "collector-down", "collector-slow"}

// workload is one upstream workload: its file, and the benchmark name.
type workload struct {
	file, name string
}

var workloads = []workload{
	{"misc/performance-config.yaml", "SchedulingBasic/500Nodes"},
	{"misc/performance-config.yaml", "SchedulingBasic/5000Nodes"},
	{"topology_spreading/performance-config.yaml", "TopologySpreading/500Nodes"},
}

// smokeWorkload is the smallest workload: it checks the harness in every
// mode, too briefly to measure throughput.
var smokeWorkload = workload{"misc/performance-config.yaml", "SchedulingBasic/5Nodes"}

// peakWorkload is the workload whose best throughput the sidecar's ingest
// rate is compared with.
const peakWorkload = "SchedulingBasic/5000Nodes"

// benchmark is the workload's benchmark name.
func (w workload) benchmark() string { return "BenchmarkPerfScheduling/" + w.name }

// pattern matches the workload's benchmark alone: go test matches each
// part of a -bench pattern anywhere in the name's part, so an unanchored
// TopologySpreading would run PreferredTopologySpreading and
// DefaultTopologySpreading too.
func (w workload) pattern() string {
	parts := strings.Split(w.benchmark(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// run is what one benchmark process measured.
type run struct {
	// throughput is the harness's SchedulingThroughput average, pods/s;
	// 0 when the workload was too short to measure it.
	throughput float64
	// attemptSeconds is the scheduler's own average time per scheduled
	// attempt (scheduler_scheduling_attempt_duration_seconds, result
	// scheduled: from popping the pod to its binding); 0 when absent.
	attemptSeconds float64
	// cpuSeconds is the benchmark process's user and system time: the
	// same work in every mode but schedscope's (the collector runs in
	// its own process), set-up and kube-apiserver included.
	cpuSeconds float64
	// The rest is test/bench's result line.
	peakHeapBytes        uint64
	records, recordsRead int64
	dropped              uint64
}

// benchmarkHeader starts perf.txt: the configuration every line shares,
// and that more pods/s is better.
const benchmarkHeader = "pkg: github.com/schedscope/schedscope/test/bench\nUnit pods/s better=higher\n"

// benchmarkLine is the run in the Go benchmark format, one iteration, the
// mode a sub-benchmark key so that benchstat compares modes with -col /mode.
// benchstat scales the base units: sec to ms, B to MiB.
func (r run) benchmarkLine(w workload, mode string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/mode=%s 1", w.benchmark(), mode)
	if r.throughput > 0 {
		fmt.Fprintf(&b, " %s pods/s", strconv.FormatFloat(r.throughput, 'g', -1, 64))
	}
	if r.attemptSeconds > 0 {
		fmt.Fprintf(&b, " %s sec/attempt", strconv.FormatFloat(r.attemptSeconds, 'g', -1, 64))
	}
	fmt.Fprintf(&b, " %d peak-heap-B %s cpu-sec", r.peakHeapBytes, strconv.FormatFloat(r.cpuSeconds, 'g', -1, 64))
	return b.String()
}

// summary is what the report needs beside benchstat's tables.
type summary struct {
	workloads []string
	// records and lost are the attempts recorded in the observed modes,
	// and those of them not read back from the record stream or dropped.
	records, lost map[string]int64
	// peak is peakWorkload's best throughput in any mode and run, pods/s.
	peak float64
}

// measure runs each workload in each mode, interleaved, and writes each
// run to perf in the Go benchmark format.
func (o *options) measure(ctx context.Context, raw io.Writer, binary, perf string) (*summary, error) {
	selected := []workload{smokeWorkload}
	count := 1
	if !o.smoke {
		selected, count = nil, o.count
		for _, w := range workloads {
			if strings.Contains(w.name, o.only) {
				selected = append(selected, w)
			}
		}
	}
	f, err := os.Create(perf)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fmt.Fprint(f, benchmarkHeader)
	s := &summary{records: map[string]int64{}, lost: map[string]int64{}}
	for _, w := range selected {
		s.workloads = append(s.workloads, w.name)
		for i := range count {
			for _, mode := range modes {
				log.Printf("%s, %s, run %d of %d", w.name, mode, i+1, count)
				r, err := runOnce(ctx, raw, binary, o.out, w, mode, o.smoke)
				if err == nil && r.throughput == 0 && !o.smoke {
					err = fmt.Errorf("no SchedulingThroughput")
				}
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", w.name, mode, err)
				}
				if _, err := fmt.Fprintln(f, r.benchmarkLine(w, mode)); err != nil {
					return nil, err
				}
				if mode != "plain" {
					s.records[w.name] += r.records
					s.lost[w.name] += r.records - r.recordsRead + int64(r.dropped)
				}
				if w.name == peakWorkload {
					s.peak = max(s.peak, r.throughput)
				}
			}
		}
	}
	return s, f.Close()
}

// runOnce runs one workload in one mode in its own process. With
// requireRecords the run fails unless the observed modes recorded every
// attempt and read every record back. The run's directory (its logs) is
// kept when it fails.
func runOnce(ctx context.Context, raw io.Writer, binary, out string, w workload, mode string, requireRecords bool) (run, error) {
	dir, err := os.MkdirTemp(out, "run-")
	if err != nil {
		return run{}, err
	}
	resultFile := filepath.Join(dir, "result.jsonl")
	cmd := exec.CommandContext(ctx, binary, "-test.run", "^$", "-test.bench", w.pattern(), "-test.benchtime", "1x",
		"-perf-scheduling-label-filter=", "-data-items-dir", dir, "-schedscope-mode", mode,
		"-schedscope-workload-file", w.file, "-schedscope-result-file", resultFile,
		"-schedscope-require-records="+strconv.FormatBool(requireRecords))
	cmd.Env = append(os.Environ(), "ARTIFACTS="+dir)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(raw, &output), io.MultiWriter(raw, &output)
	fmt.Fprintf(raw, "\n=== %s %s\n", w.name, mode)
	if err := cmd.Run(); err != nil {
		return run{}, fmt.Errorf("%w; logs in %s:\n%s", err, dir, output.Bytes())
	}
	r, err := readRun(raw, dir, w)
	if err != nil {
		return run{}, fmt.Errorf("%w (in %s)", err, dir)
	}
	r.cpuSeconds = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return r, os.RemoveAll(dir)
}

// readRun reads a run's result line and the harness's data items from
// dir, copying the data items to raw.
func readRun(raw io.Writer, dir string, w workload) (run, error) {
	var res struct {
		PeakHeapBytes uint64 `json:"peakHeapBytes"`
		Records       int64  `json:"records"`
		RecordsRead   int64  `json:"recordsRead"`
		Dropped       uint64 `json:"dropped"`
	}
	if err := readJSONLine(filepath.Join(dir, "result.jsonl"), &res); err != nil {
		return run{}, err
	}
	r := run{peakHeapBytes: res.PeakHeapBytes, records: res.Records, recordsRead: res.RecordsRead, dropped: res.Dropped}
	items, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return run{}, err
	}
	for _, path := range items {
		data, err := os.ReadFile(path)
		if err != nil {
			return run{}, err
		}
		fmt.Fprintf(raw, "%s\n", data)
		var doc struct {
			DataItems []struct {
				Data   map[string]float64
				Labels map[string]string
				Unit   string
			}
		}
		if json.Unmarshal(data, &doc) != nil {
			continue
		}
		for _, item := range doc.DataItems {
			if !strings.HasPrefix(item.Labels["Name"], w.benchmark()+"/") {
				continue
			}
			switch item.Labels["Metric"] {
			case "SchedulingThroughput":
				r.throughput = item.Data["Average"]
			case "scheduler_scheduling_attempt_duration_seconds":
				if item.Labels["result"] != "scheduled" {
					continue
				}
				if item.Unit != "ms" {
					return run{}, fmt.Errorf("%s: scheduler_scheduling_attempt_duration_seconds in %q, want ms", path, item.Unit)
				}
				r.attemptSeconds = item.Data["Average"] / 1000
			}
		}
	}
	return r, nil
}

func readJSONLine(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return fmt.Errorf("%s is empty", path)
	}
	return json.Unmarshal(s.Bytes(), v)
}

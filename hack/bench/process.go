package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedscope/schedscope/test/bench/processrun"
)

// processWorkload is an upstream workload measured with the scheduler in a
// process of its own (test/bench TestProcessCost), the parameters that
// override the workload file's, and the runs of each mode when not
// -process-count.
type processWorkload struct {
	workload
	params string
	runs   int
}

var processWorkloads = []processWorkload{
	{workload: workload{"misc/performance-config.yaml", "SchedulingBasic/5000Nodes_10000Pods"}},
	{workload: workload{"topology_spreading/performance-config.yaml", "TopologySpreading/5000Nodes"}},
	// The largest upstream workload: 20000 nodes, 20000 pods asking for
	// host port 80, opportunistic batching on. One run of each mode.
	{workload: workload{"batching/performance-config.yaml", "HostPortConflict/20000Nodes_20000Pods_100BatchSize"}, runs: 1},
}

// shadowWorkload is the workload -shadow measures a shadow profile's cost on.
var shadowWorkload = processWorkloads[0]

// processSmokes check the per-process harness in every mode on 50 nodes,
// every attempt recorded, read and traced: with the default profile (100
// measured pods), and with a test case's own scheduler configuration,
// feature gates and signature labels (50 measured pods).
var processSmokes = []processWorkload{
	{
		workload: workload{"topology_spreading/performance-config.yaml", "TopologySpreading/5000Nodes"},
		params:   "initNodes=50,initPods=50,measurePods=100",
	},
	{
		workload: workload{"batching/performance-config.yaml", "HostPortConflict/20000Nodes_20000Pods_100BatchSize"},
		params:   "initNodes=50,measurePods=50",
	},
}

// benchmarkLine is the run in the Go benchmark format, one iteration, the
// mode a sub-benchmark key: throughput, the scheduler process's CPU time
// per measured pod and its peak RSS. The mode comes before the workload:
// benchstat would read a mode's trailing -N (shadow-10) as GOMAXPROCS.
func benchmarkLine(r processrun.Run) string {
	return fmt.Sprintf("BenchmarkProcess/mode=%s/%s 1 %s pods/s %s cpu-sec/pod %d peak-RSS-B", r.Mode, r.Workload,
		strconv.FormatFloat(r.Throughput, 'g', -1, 64), strconv.FormatFloat(r.CPUSeconds/float64(r.Pods), 'g', -1, 64), r.PeakRSSBytes)
}

// measureProcesses runs TestProcessCost on each selected workload, writes
// its runs to processFile in the Go benchmark format and returns them.
func (o *options) measureProcesses(ctx context.Context, raw io.Writer, processFile string) ([]processrun.Run, error) {
	binary := filepath.Join(o.out, "process.test")
	if err := command(ctx, raw, "go", "test", "-c", "-tags", "process", "-o", binary, "./test/bench"); err != nil {
		return nil, fmt.Errorf("building the process benchmark: %w", err)
	}
	selected, count, modes := processSmokes, 1, "plain,recording,tracing"
	switch {
	case o.shadow:
		selected, count, modes = []processWorkload{shadowWorkload}, o.processCount, "recording,shadow,shadow-10"
	case !o.smoke:
		selected, count = nil, o.processCount
		for _, w := range processWorkloads {
			if strings.Contains(w.name, o.only) {
				selected = append(selected, w)
			}
		}
	}
	results := filepath.Join(o.out, "process.jsonl")
	if err := os.Remove(results); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, w := range selected {
		runs := count
		if w.runs > 0 {
			runs = w.runs
		}
		began := time.Now()
		log.Printf("%s, each scheduler in its own process: %d runs of each mode", w.name, runs)
		cmd := exec.CommandContext(ctx, binary, "-test.run", "^TestProcessCost$", "-test.v", "-test.count=1", "-test.timeout=5h",
			"-schedscope-workload-file", w.file, "-schedscope-process-workload", w.name, "-schedscope-process-params", w.params,
			"-schedscope-process-count", strconv.Itoa(runs), "-schedscope-process-modes", modes,
			"-schedscope-result-file", results, "-schedscope-process-profiles", o.profiles)
		cmd.Stdout, cmd.Stderr = io.MultiWriter(raw, os.Stderr), io.MultiWriter(raw, os.Stderr)
		fmt.Fprintf(raw, "\n=== %s, each scheduler in its own process\n", w.name)
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%s, each scheduler in its own process: %w", w.name, err)
		}
		log.Printf("%s took %v", w.name, time.Since(began).Round(time.Second))
	}
	return writeProcessFile(results, processFile)
}

// writeProcessFile reads the runs of the result file results and writes
// them to processFile in the Go benchmark format.
func writeProcessFile(results, processFile string) ([]processrun.Run, error) {
	runs, err := readProcessRuns(results)
	if err != nil {
		return nil, err
	}
	f, err := os.Create(processFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fmt.Fprint(f, processBenchmarkHeader)
	for _, r := range runs {
		fmt.Fprintln(f, benchmarkLine(r))
	}
	return runs, f.Close()
}

// processBenchmarkHeader starts process.txt.
const processBenchmarkHeader = "pkg: github.com/schedscope/schedscope/test/bench\nUnit pods/s better=higher\n"

func readProcessRuns(path string) ([]processrun.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var runs []processrun.Run
	s := bufio.NewScanner(f)
	for s.Scan() {
		var r processrun.Run
		if err := json.Unmarshal(s.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Pods <= 0 {
			return nil, fmt.Errorf("%s: a run of %d pods", path, r.Pods)
		}
		runs = append(runs, r)
	}
	return runs, s.Err()
}

// comparison is what the runs of the per-process benchmark are compared
// with: the mode of the base runs and the report's sections.
type comparison struct {
	base          string
	table, ratios section
}

var (
	// againstPlain compares every mode with plain kube-scheduler.
	againstPlain = comparison{"plain", processAgainstPlain, processRatios}
	// againstNoShadow compares the shadow modes with recording, the same
	// scheduler without a shadow.
	againstNoShadow = comparison{"recording", shadowAgainstNone, shadowRatios}
)

// compareProcesses prints benchstat's table of processFile, every mode
// against c's base (the first mode of the first round), and what the
// sidecar and the OTLP receiver cost in their own processes.
func compareProcesses(ctx context.Context, w io.Writer, benchstat, processFile string, runs []processrun.Run, c comparison) error {
	c.table.start(w)
	if err := command(ctx, w, benchstat, "-col", "/mode", processFile); err != nil {
		return fmt.Errorf("benchstat: %w", err)
	}
	printRatios(w, runs, c)
	processOthers.start(w)
	keys, byKey := groupRuns(runs)
	for _, k := range keys {
		if k.mode == "plain" {
			continue
		}
		rs := byKey[k]
		fmt.Fprintf(w, "%s/mode=%s: sidecar %.2f ms CPU a pod, peak RSS %.0f MiB", k.workload, k.mode,
			median(rs, func(r processrun.Run) float64 { return r.SidecarCPUSeconds * 1000 / float64(r.Pods) }),
			median(rs, func(r processrun.Run) float64 { return float64(r.SidecarPeakRSSBytes) / (1 << 20) }))
		if k.mode == "tracing" {
			fmt.Fprintf(w, "; OTLP receiver %.2f ms CPU a pod, peak RSS %.0f MiB",
				median(rs, func(r processrun.Run) float64 { return r.SinkCPUSeconds * 1000 / float64(r.Pods) }),
				median(rs, func(r processrun.Run) float64 { return float64(r.SinkPeakRSSBytes) / (1 << 20) }))
		}
		fmt.Fprintln(w)
	}
	return nil
}

// runKey is a workload and a mode.
type runKey struct{ workload, mode string }

// groupRuns groups runs by workload and mode; keys are in the order of
// their first run.
func groupRuns(runs []processrun.Run) (keys []runKey, byKey map[runKey][]processrun.Run) {
	byKey = map[runKey][]processrun.Run{}
	for _, r := range runs {
		k := runKey{r.Workload, r.Mode}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	return keys, byKey
}

// processMetrics are the scheduler's measures in a run, as printRatios
// shows them; the overhead in memory also as the difference to plain.
var processMetrics = []struct {
	name       string
	value      func(processrun.Run) float64
	difference bool
}{
	{"pods/s", func(r processrun.Run) float64 { return r.Throughput }, false},
	{"CPU ms/pod", func(r processrun.Run) float64 { return r.CPUSeconds * 1000 / float64(r.Pods) }, false},
	{"peak RSS MiB", func(r processrun.Run) float64 { return float64(r.PeakRSSBytes) / (1 << 20) }, true},
	{"algorithm p50 ms", func(r processrun.Run) float64 { return r.AlgorithmP50Seconds * 1000 }, false},
	{"algorithm p99 ms", func(r processrun.Run) float64 { return r.AlgorithmP99Seconds * 1000 }, false},
}

// printRatios prints, per workload and mode, each measure's median and
// range over the runs, and its ratio to c's base mode: the median and
// range of the ratios of the runs of one round (the k-th run of a mode
// against the k-th base run of the workload; the rounds are interleaved,
// so a round's runs share the machine's state). A measure no run has (a
// result file older than the measure) is left out.
func printRatios(w io.Writer, runs []processrun.Run, c comparison) {
	keys, byKey := groupRuns(runs)
	c.ratios.start(w)
	for _, k := range keys {
		rs, baseRuns := byKey[k], byKey[runKey{k.workload, c.base}]
		fmt.Fprintf(w, "%s/mode=%s (%d runs):", k.workload, k.mode, len(rs))
		for _, m := range processMetrics {
			values := collect(rs, m.value)
			if slices.Max(values) == 0 {
				continue
			}
			fmt.Fprintf(w, " %s %s", m.name, spread(values))
			if k.mode == c.base || len(baseRuns) == 0 {
				continue
			}
			base := collect(baseRuns, m.value)
			var ratios, differences []float64
			for i := range min(len(values), len(base)) {
				ratios = append(ratios, values[i]/base[i])
				differences = append(differences, values[i]-base[i])
			}
			fmt.Fprintf(w, " = %s×", spread(ratios))
			if m.difference {
				fmt.Fprintf(w, " = %s + %s", c.base, spread(differences))
			}
		}
		fmt.Fprintln(w)
	}
}

// collect is f of each run, in the runs' order.
func collect(runs []processrun.Run, f func(processrun.Run) float64) []float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	return v
}

// spread formats the median and range of values.
func spread(values []float64) string {
	v := slices.Sorted(slices.Values(values))
	return fmt.Sprintf("%.3g [%.3g, %.3g]", middle(v), v[0], v[len(v)-1])
}

// middle is the median of sorted values.
func middle(v []float64) float64 {
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// median is the median of f over runs.
func median(runs []processrun.Run, f func(processrun.Run) float64) float64 {
	return middle(slices.Sorted(slices.Values(collect(runs, f))))
}

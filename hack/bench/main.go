// Command bench measures what schedscope costs the scheduler. It runs the
// upstream scheduler_perf workloads (test/bench) in five modes, plain
// kube-scheduler, schedscope recording, schedscope recording and tracing
// to a live receiver in its own process, and tracing to a collector that
// is down or that never answers, interleaved, each run in its own
// process. It prints for each workload the median throughput of each
// mode, the ratios to plain (and of the collector modes to recording,
// tracing off) and the peak heap; the same for the scheduler's own time
// per attempt; the benchmark processes' CPU time; then the recorder
// micro-benchmarks and the sidecar's ingest rate. Raw results go to -out.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
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

// run is one benchmark process's result.
type run struct {
	Throughput    float64
	PeakHeapBytes uint64
	Records       int64
	RecordsRead   int64
	Dropped       uint64
	SpansReceived int64
	SpansLost     uint64
	// AttemptMillis is the scheduler's own average time per scheduled
	// attempt (scheduler_scheduling_attempt_duration_seconds, result
	// scheduled: from popping the pod to its binding), in ms.
	AttemptMillis float64 `json:"-"`
	// CPUSeconds is the benchmark process's user and system time: the
	// same work in every mode but schedscope's (the collector runs in
	// its own process), set-up and kube-apiserver included.
	CPUSeconds float64 `json:"-"`
}

func main() {
	out := flag.String("out", "_output/bench", "directory for raw results")
	count := flag.Int("count", 5, "runs of each workload in each mode")
	only := flag.String("workload", "", "run only the workloads whose name contains this")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	raw, err := os.Create(filepath.Join(*out, "results.txt"))
	if err != nil {
		log.Fatal(err)
	}
	defer raw.Close()
	binary := filepath.Join(*out, "bench.test")
	if err := command(raw, "go", "test", "-c", "-o", binary, "./test/bench"); err != nil {
		log.Fatalf("building the benchmark: %v", err)
	}

	results := map[string]map[string][]run{}
	for _, w := range workloads {
		if !strings.Contains(w.name, *only) {
			continue
		}
		results[w.name] = map[string][]run{}
		for i := range *count {
			for _, mode := range modes {
				log.Printf("%s, %s, run %d of %d", w.name, mode, i+1, *count)
				r, err := runOnce(raw, binary, *out, w, mode)
				if err != nil {
					log.Fatalf("%s %s: %v", w.name, mode, err)
				}
				results[w.name][mode] = append(results[w.name][mode], r)
			}
		}
	}

	table := io.MultiWriter(os.Stdout, raw)
	fmt.Fprintln(table, "\nThroughput (pods/s, median of runs); ratios to plain kube-scheduler, and of the collector modes to recording (tracing off); peak heap (MiB, median; includes the in-process kube-apiserver)")
	tw := tabwriter.NewWriter(table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\t"+modeColumnsHeader+"\theap plain\theap recording\theap tracing\trecords lost")
	for _, w := range workloads {
		byMode, ok := results[w.name]
		if !ok {
			continue
		}
		var lost int64
		for _, m := range modes[1:] {
			for _, r := range byMode[m] {
				lost += r.Records - r.RecordsRead + int64(r.Dropped)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.0f\t%d\n", w.name, modeColumns(byMode, throughput, 1),
			median(byMode["plain"], heapMiB), median(byMode["recording"], heapMiB), median(byMode["tracing"], heapMiB), lost)
	}
	tw.Flush()

	fmt.Fprintln(table, "\nScheduling time: the scheduler's average per scheduled attempt, from popping the pod to its binding (ms, median of runs; scheduler_scheduling_attempt_duration_seconds), and its ratios")
	tw = tabwriter.NewWriter(table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\t"+modeColumnsHeader)
	for _, w := range workloads {
		if byMode, ok := results[w.name]; ok {
			fmt.Fprintf(tw, "%s\t%s\n", w.name, modeColumns(byMode, attemptMillis, 2))
		}
	}
	tw.Flush()

	fmt.Fprintln(table, "\nCPU time of the benchmark process (s, median of runs), and what each mode adds to plain per record (ms)")
	tw = tabwriter.NewWriter(table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tplain\trecording\ttracing\tcollector down\tcollector slow\trecords\trecording +ms/record\ttracing +ms/record\tdown +ms/record\tslow +ms/record")
	for _, w := range workloads {
		byMode, ok := results[w.name]
		if !ok {
			continue
		}
		cpu := func(mode string) float64 { return median(byMode[mode], cpuSeconds) }
		records := median(byMode["recording"], func(r run) float64 { return float64(r.Records) })
		extra := func(mode string) float64 { return 1000 * (cpu(mode) - cpu("plain")) / records }
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\n", w.name, cpu("plain"), cpu("recording"), cpu("tracing"),
			cpu("collector-down"), cpu("collector-slow"), records, extra("recording"), extra("tracing"), extra("collector-down"), extra("collector-slow"))
	}
	tw.Flush()

	fmt.Fprintln(table, "\nRecorder and tracer micro-benchmarks (per node-plugin call; per 5000-node record built, encoded and observed into the metrics; per attempt traced; all but the first off the scheduling path):")
	micro := exec.Command("go", "test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", "2s", "./pkg/observe", "./pkg/record", "./pkg/scheduler/metrics", "./pkg/tracing")
	micro.Stdout, micro.Stderr = table, raw
	if err := micro.Run(); err != nil {
		log.Fatalf("micro-benchmarks: %v", err)
	}

	fmt.Fprintln(table, "\nSidecar ingest of 5000-node records, stream to SQLite (BenchmarkFollow):")
	var ingest bytes.Buffer
	follow := exec.Command("go", "test", "-run", "^$", "-bench", "BenchmarkFollow", "-benchtime", "2000x", "./pkg/sidecar/follow")
	follow.Stdout, follow.Stderr = io.MultiWriter(table, &ingest), raw
	if err := follow.Run(); err != nil {
		log.Fatalf("ingest benchmark: %v", err)
	}
	if byMode, ok := results["SchedulingBasic/5000Nodes"]; ok {
		var peak float64
		for _, runs := range byMode {
			for _, r := range runs {
				peak = max(peak, r.Throughput)
			}
		}
		rates := recordsPerSecond(ingest.String())
		for _, name := range slices.Sorted(maps.Keys(rates)) {
			rate := rates[name]
			fmt.Fprintf(table, "%s: %.0f records/s, %.2f times the scheduler's peak of %.1f pods/s at 5000 nodes (best run above)\n", name, rate, rate/peak, peak)
		}
	}
	log.Printf("raw results in %s", raw.Name())
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

// modeColumnsHeader names the columns modeColumns writes.
const modeColumnsHeader = "plain\trecording\ttracing\tcollector down\tcollector slow\trecording/plain\ttracing/plain\tdown/recording\tslow/recording"

// modeColumns writes the median of value in each mode, with prec
// decimals, then the ratios of recording and tracing to plain and of the
// collector modes to recording (tracing off), tab-separated.
func modeColumns(byMode map[string][]run, value func(run) float64, prec int) string {
	m := func(mode string) float64 { return median(byMode[mode], value) }
	plain, recording, tracing, down, slow := m("plain"), m("recording"), m("tracing"), m("collector-down"), m("collector-slow")
	return fmt.Sprintf("%.*f\t%.*f\t%.*f\t%.*f\t%.*f\t%.3f\t%.3f\t%.3f\t%.3f", prec, plain, prec, recording, prec, tracing, prec, down, prec, slow,
		recording/plain, tracing/plain, down/recording, slow/recording)
}

func throughput(r run) float64    { return r.Throughput }
func heapMiB(r run) float64       { return float64(r.PeakHeapBytes) / (1 << 20) }
func cpuSeconds(r run) float64    { return r.CPUSeconds }
func attemptMillis(r run) float64 { return r.AttemptMillis }

func median(runs []run, value func(run) float64) float64 {
	if len(runs) == 0 {
		return 0
	}
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = value(r)
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// runOnce runs one workload in one mode in its own process.
func runOnce(raw io.Writer, binary, out string, w workload, mode string) (run, error) {
	dir, err := os.MkdirTemp(out, "run-")
	if err != nil {
		return run{}, err
	}
	defer os.RemoveAll(dir)
	resultFile := filepath.Join(dir, "result.jsonl")
	cmd := exec.Command(binary, "-test.run", "^$", "-test.bench", w.pattern(), "-test.benchtime", "1x",
		"-perf-scheduling-label-filter=", "-data-items-dir", dir, "-schedscope-mode", mode,
		"-schedscope-workload-file", w.file, "-schedscope-result-file", resultFile)
	cmd.Env = append(os.Environ(), "ARTIFACTS="+dir)
	cmd.Stdout, cmd.Stderr = raw, raw
	fmt.Fprintf(raw, "\n=== %s %s\n", w.name, mode)
	if err := cmd.Run(); err != nil {
		return run{}, err
	}
	var r run
	if err := readJSONLine(resultFile, &r); err != nil {
		return run{}, err
	}
	r.CPUSeconds = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
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
				r.Throughput = item.Data["Average"]
			case "scheduler_scheduling_attempt_duration_seconds":
				if item.Labels["result"] == "scheduled" {
					r.AttemptMillis = item.Data["Average"]
				}
			}
		}
	}
	if r.Throughput == 0 {
		return run{}, fmt.Errorf("no SchedulingThroughput in %s", dir)
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

func command(out io.Writer, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	return cmd.Run()
}

// Command bench measures what schedscope costs the scheduler. It runs the
// upstream scheduler_perf workloads (test/bench) in three modes, plain
// kube-scheduler, schedscope recording, schedscope recording and tracing
// to a live receiver, and tracing to a collector that is down, interleaved, each run in its own process, then prints for each
// workload the median throughput of each mode, the ratios to plain and the
// peak heap. It also runs the recorder micro-benchmarks. Raw results go to
// -out.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
)

var modes = []string{"plain", "recording", "tracing", "collector-down"}

// workload is one upstream workload: its file, and the benchmark name.
type workload struct {
	file, name string
}

var workloads = []workload{
	{"misc/performance-config.yaml", "SchedulingBasic/500Nodes"},
	{"misc/performance-config.yaml", "SchedulingBasic/5000Nodes"},
	{"topology_spreading/performance-config.yaml", "TopologySpreading/500Nodes"},
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
}

func main() {
	out := flag.String("out", "_output/bench", "directory for raw results")
	count := flag.Int("count", 3, "runs of each workload in each mode")
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
	fmt.Fprintln(table, "\nThroughput (pods/s, median of runs), ratio to plain kube-scheduler, and peak heap (MiB, median; includes the in-process kube-apiserver)")
	tw := tabwriter.NewWriter(table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tplain\trecording\ttracing\tcollector down\trecording/plain\ttracing/plain\tdown/plain\theap plain\theap recording\theap tracing\trecords lost")
	for _, w := range workloads {
		byMode, ok := results[w.name]
		if !ok {
			continue
		}
		plain, recording, tracing := median(byMode["plain"], throughput), median(byMode["recording"], throughput), median(byMode["tracing"], throughput)
		down := median(byMode["collector-down"], throughput)
		var lost int64
		for _, m := range []string{"recording", "tracing", "collector-down"} {
			for _, r := range byMode[m] {
				lost += r.Records - r.RecordsRead + int64(r.Dropped)
			}
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\t%.0f\t%.0f\t%.0f\t%d\n", w.name, plain, recording, tracing, down, recording/plain, tracing/plain, down/plain,
			median(byMode["plain"], heapMiB), median(byMode["recording"], heapMiB), median(byMode["tracing"], heapMiB), lost)
	}
	tw.Flush()

	fmt.Fprintln(table, "\nRecorder micro-benchmarks (per node-plugin call, and per 5000-node record built off the scheduling path):")
	micro := exec.Command("go", "test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", "2s", "./pkg/plugins/observe")
	micro.Stdout, micro.Stderr = table, raw
	if err := micro.Run(); err != nil {
		log.Fatalf("micro-benchmarks: %v", err)
	}
	log.Printf("raw results in %s", raw.Name())
}

func throughput(r run) float64 { return r.Throughput }
func heapMiB(r run) float64    { return float64(r.PeakHeapBytes) / (1 << 20) }

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
	cmd := exec.Command(binary, "-test.run", "^$", "-test.bench", "BenchmarkPerfScheduling/"+w.name+"$", "-test.benchtime", "1x",
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
			if item.Labels["Metric"] == "SchedulingThroughput" {
				r.Throughput = item.Data["Average"]
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

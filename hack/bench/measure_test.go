package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/test/bench/processrun"
)

func TestBenchmarkLine(t *testing.T) {
	w := workload{"misc/performance-config.yaml", "SchedulingBasic/500Nodes"}
	tests := []struct {
		name string
		run  run
		mode string
		want string
	}{
		{
			name: "every metric",
			run:  run{throughput: 208.5, attemptSeconds: 0.08532, cpuSeconds: 41.25, peakHeapBytes: 346030080},
			mode: "recording",
			want: "BenchmarkPerfScheduling/SchedulingBasic/500Nodes/mode=recording 1 208.5 pods/s 0.08532 sec/attempt 346030080 peak-heap-B 41.25 cpu-sec",
		},
		{
			name: "too short to measure throughput, no attempt metric",
			run:  run{cpuSeconds: 3, peakHeapBytes: 1 << 20},
			mode: "plain",
			want: "BenchmarkPerfScheduling/SchedulingBasic/500Nodes/mode=plain 1 1048576 peak-heap-B 3 cpu-sec",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.run.benchmarkLine(w, tt.mode)); diff != "" {
				t.Errorf("benchmarkLine (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPattern(t *testing.T) {
	w := workload{"topology_spreading/performance-config.yaml", "TopologySpreading/500Nodes"}
	want := "^BenchmarkPerfScheduling$/^TopologySpreading$/^500Nodes$"
	if diff := cmp.Diff(want, w.pattern()); diff != "" {
		t.Errorf("pattern (-want +got):\n%s", diff)
	}
}

func TestRecordsPerSecond(t *testing.T) {
	out := "goos: linux\nBenchmarkFollow-2   \t    2000\t    412345 ns/op\t      2425 records/s\nPASS\n"
	want := map[string]float64{"BenchmarkFollow-2": 2425}
	if diff := cmp.Diff(want, recordsPerSecond(out)); diff != "" {
		t.Errorf("recordsPerSecond (-want +got):\n%s", diff)
	}
}

func TestProcessBenchmarkLine(t *testing.T) {
	r := processrun.Run{Mode: "tracing", Workload: "TopologySpreading/5000Nodes", Pods: 2000, Throughput: 151.25, CPUSeconds: 9, PeakRSSBytes: 734003200}
	want := "BenchmarkProcess/mode=tracing/TopologySpreading/5000Nodes 1 151.25 pods/s 0.0045 cpu-sec/pod 734003200 peak-RSS-B"
	if diff := cmp.Diff(want, benchmarkLine(r)); diff != "" {
		t.Errorf("benchmarkLine (-want +got):\n%s", diff)
	}
}

func TestPrintRatios(t *testing.T) {
	w := "SchedulingBasic/5000Nodes"
	runs := []processrun.Run{
		{Mode: "plain", Workload: w, Pods: 1000, Throughput: 200, CPUSeconds: 4, PeakRSSBytes: 100 << 20},
		{Mode: "recording", Workload: w, Pods: 1000, Throughput: 150, CPUSeconds: 5, PeakRSSBytes: 150 << 20},
		{Mode: "recording", Workload: w, Pods: 1000, Throughput: 100, CPUSeconds: 6, PeakRSSBytes: 160 << 20},
		{Mode: "plain", Workload: w, Pods: 1000, Throughput: 100, CPUSeconds: 3, PeakRSSBytes: 100 << 20},
	}
	var out strings.Builder
	printRatios(&out, runs, againstPlain)
	want := `
The same runs as ratios to plain kube-scheduler: median [lowest, highest] over the runs, and of the ratios of the runs of one round
SchedulingBasic/5000Nodes/mode=plain (2 runs): pods/s 150 [100, 200] CPU ms/pod 3.5 [3, 4] peak RSS MiB 100 [100, 100]
SchedulingBasic/5000Nodes/mode=recording (2 runs): pods/s 125 [100, 150] = 0.875 [0.75, 1]× CPU ms/pod 5.5 [5, 6] = 1.62 [1.25, 2]× peak RSS MiB 155 [150, 160] = 1.55 [1.5, 1.6]× = plain + 55 [50, 60]
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("printRatios (-want +got):\n%s", diff)
	}
}

// TestPrintRatiosAgainstNoShadow: the shadow modes are compared with
// recording, the live profile's latency included.
func TestPrintRatiosAgainstNoShadow(t *testing.T) {
	w := "SchedulingBasic/5000Nodes"
	runs := []processrun.Run{
		{Mode: "recording", Workload: w, Pods: 1000, Throughput: 200, CPUSeconds: 4, PeakRSSBytes: 100 << 20, AlgorithmP50Seconds: 0.002, AlgorithmP99Seconds: 0.01},
		{Mode: "shadow", Workload: w, Pods: 1000, Throughput: 100, CPUSeconds: 6, PeakRSSBytes: 120 << 20, AlgorithmP50Seconds: 0.004, AlgorithmP99Seconds: 0.015},
	}
	var out strings.Builder
	printRatios(&out, runs, againstNoShadow)
	want := `
The same runs as ratios to recording without a shadow, with the scheduling algorithm's median and 99th percentile durations, a shadow's run included (scheduler_scheduling_algorithm_duration_seconds): median [lowest, highest] over the runs, and of the ratios of the runs of one round
SchedulingBasic/5000Nodes/mode=recording (1 runs): pods/s 200 [200, 200] CPU ms/pod 4 [4, 4] peak RSS MiB 100 [100, 100] algorithm p50 ms 2 [2, 2] algorithm p99 ms 10 [10, 10]
SchedulingBasic/5000Nodes/mode=shadow (1 runs): pods/s 100 [100, 100] = 0.5 [0.5, 0.5]× CPU ms/pod 6 [6, 6] = 1.5 [1.5, 1.5]× peak RSS MiB 120 [120, 120] = 1.2 [1.2, 1.2]× = recording + 20 [20, 20] algorithm p50 ms 4 [4, 4] = 2 [2, 2]× algorithm p99 ms 15 [15, 15] = 1.5 [1.5, 1.5]×
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("printRatios (-want +got):\n%s", diff)
	}
}

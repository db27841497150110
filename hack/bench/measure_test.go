package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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

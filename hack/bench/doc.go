// Command bench measures what schedscope costs the scheduler. It runs the
// upstream scheduler_perf workloads (test/bench) in five modes, plain
// kube-scheduler, schedscope recording, schedscope recording and tracing
// to a live receiver in its own process, and tracing to a collector that
// is down or that never answers, interleaved, each run in its own process.
//
// Each run is written to perf.txt under -out as a line in the Go benchmark
// format, its mode a sub-benchmark key
// (BenchmarkPerfScheduling/SchedulingBasic/500Nodes/mode=recording), and
// benchstat compares the modes (-col /mode): throughput, the scheduler's
// own time per attempt, peak heap and CPU time, each mode against plain,
// then the collector modes against recording. The recorder micro-benchmarks
// and the sidecar's ingest rate follow. benchstat's tables are saved in
// benchstat.txt, the micro-benchmarks in micro.txt, everything the runs
// printed in results.txt.
//
// The scheduler_perf runs share one process with kube-apiserver. So each
// scheduler is also measured in a process of its own (test/bench
// TestProcessCost, build tag process): real etcd and kube-apiserver
// processes hold an upstream workload's nodes and first pods, and a fresh
// kube-scheduler or schedscope-scheduler process schedules its measured
// pods in each mode and round, the sidecar and the OTLP receiver in
// processes of their own. The scheduler's CPU time per pod (utime and
// stime of /proc/<pid>/stat) and peak RSS (VmHWM) and the throughput of
// each run are lines in process.txt, which benchstat compares (-col /mode).
// -parts selects the parts to run.
//
// -shadow measures a shadow profile's cost instead: the per-process
// benchmark of SchedulingBasic/5000Nodes_10000Pods in the modes recording
// (no shadow), shadow and shadow-10 (a bin-packing shadow of every attempt
// and of every tenth), compared with recording; with -doc it replaces the
// shadow results of the shadow profiles' page (make bench-shadow);
// -shadow -compare-only compares the last -shadow run's runs again.
//
// When and on what the run measured (the machine, the Go and Kubernetes
// versions, schedscope's commit) is saved in environment.json. With -doc,
// the run's environment and benchstat.txt's sections replace the results
// between the markers of the performance page; -report-only writes them
// from an existing -out without measuring:
//
//	go run ./hack/bench -report-only -out _output/bench -doc docs/performance.md
package main

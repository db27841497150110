//go:build !kube1.35

// Package bench measures what schedscope costs the scheduler, with the
// upstream scheduler_perf harness and its own workload definitions.
//
// Each run of BenchmarkPerfScheduling schedules one upstream workload file
// in one of three modes (-schedscope-mode):
//
//   - plain: kube-scheduler as upstream runs it, nothing of ours;
//   - recording: every plugin observed, every attempt recorded, the record
//     stream served on loopback and read by a watcher;
//   - tracing: recording plus tracing at 100% sampling into a live OTLP
//     receiver on loopback.
//
// The harness builds the scheduler from each test case's scheduler
// configuration and feature gates, exactly as in plain mode; the workload
// definitions are upstream's, read from the module cache. The observed modes
// install the observation on the scheduler the harness built, as
// schedscope-scheduler does on its own (observe.Recorder.Install), through
// the harness's node-update hook, before any pod is created. That hook
// arrived in Kubernetes v1.36: v1.35's harness starts its scheduler with
// none, so this package is not built for v1.35 (build tag kube1.35).
//
// TestProcessCost (build tag process) measures the same modes with each
// scheduler in a process of its own, against real etcd and kube-apiserver
// processes, so that the scheduler's CPU time and memory are its own.
package bench

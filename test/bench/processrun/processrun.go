// Package processrun is the result of one run of test/bench's
// TestProcessCost, a JSON line of its result file, as the test writes it
// and hack/bench reads it.
package processrun

// Run is what one run of TestProcessCost measured: one scheduler process
// scheduling the workload's measured pods in one mode.
type Run struct {
	Mode     string `json:"mode"`
	Workload string `json:"workload"`
	Pods     int    `json:"pods"`
	// Throughput is the pods bound per second from the first binding to
	// the last, as an informer saw them.
	Throughput float64 `json:"throughput"`
	// CPUSeconds is the scheduler process's user and system time from its
	// readiness (informers synced, scheduling starts) until its work on the
	// measured pods was done: every pod bound, and in the observed modes
	// every record emitted and read by the sidecar, every trace received.
	CPUSeconds float64 `json:"cpuSeconds"`
	// StartupCPUSeconds is its CPU time until readiness.
	StartupCPUSeconds float64 `json:"startupCPUSeconds"`
	// PeakRSSBytes is the scheduler process's VmHWM at the end.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// Attempts is the scheduler's scheduler_schedule_attempts_total.
	Attempts float64 `json:"attempts"`
	// AlgorithmP50Seconds and AlgorithmP99Seconds are the median and the
	// 99th percentile of the scheduling algorithm's durations (filtering,
	// scoring and a shadow's run, before the pod is assumed), from the
	// scheduler's scheduler_scheduling_algorithm_duration_seconds histogram,
	// interpolated within its buckets.
	AlgorithmP50Seconds float64 `json:"algorithmP50Seconds"`
	AlgorithmP99Seconds float64 `json:"algorithmP99Seconds"`
	// ShadowRuns counts the shadow profile's runs
	// (schedscope_shadow_attempts_total) in the shadow modes.
	ShadowRuns float64 `json:"shadowRuns,omitempty"`
	// Records were emitted on the record stream; RecordsStored the sidecar
	// stored, RecordsLost it counted lost; Dropped never became records.
	Records       uint64  `json:"records"`
	RecordsStored uint64  `json:"recordsStored"`
	RecordsLost   uint64  `json:"recordsLost"`
	Dropped       float64 `json:"dropped"`
	// BatchAttempts is the scheduler's scheduler_batch_attempts_total by
	// result (hint_used, hint_not_used, no_hint) where not zero: whether
	// opportunistic batching reused a pod's hint, as plain kube-scheduler
	// does with the same pods.
	BatchAttempts map[string]float64 `json:"batchAttempts,omitempty"`
	// Traces and Spans reached the OTLP receiver; SpansLost the scheduler
	// dropped or failed to export, TracesSkipped it did not trace.
	Traces        int64   `json:"traces"`
	Spans         int64   `json:"spans"`
	SpansLost     float64 `json:"spansLost"`
	TracesSkipped float64 `json:"tracesSkipped"`
	// The sidecar's and the receiver's own CPU time and peak RSS, in their
	// own processes: not the scheduler's.
	SidecarCPUSeconds   float64 `json:"sidecarCPUSeconds,omitempty"`
	SidecarPeakRSSBytes int64   `json:"sidecarPeakRSSBytes,omitempty"`
	SinkCPUSeconds      float64 `json:"sinkCPUSeconds,omitempty"`
	SinkPeakRSSBytes    int64   `json:"sinkPeakRSSBytes,omitempty"`
	// Seconds is the run's wall time, pod creation and deletion included.
	Seconds float64 `json:"seconds"`
}

// Package metrics defines the sidecar's own Prometheus metrics: the
// follower's (records received and lost, relists, epoch changes, store
// size, ingest errors) and the scheduler's health as the sidecar sees it.
// Package clustermetrics owns the series derived from the cluster's pods
// and events. Every metric is prefixed schedscope_ and labelled only from
// closed sets.
package metrics

import "github.com/prometheus/client_golang/prometheus"

const namespace = "schedscope"

// Ingest error stages.
const (
	StageConnect = "connect"
	StageDecode  = "decode"
	StageStore   = "store"
)

// Scheduler probes.
const (
	ProbeLiveness  = "liveness"
	ProbeReadiness = "readiness"
)

// Metrics groups the sidecar's metrics.
type Metrics struct {
	RecordsReceived prometheus.Counter
	RecordsLost     prometheus.Counter
	Relists         prometheus.Counter
	EpochChanges    prometheus.Counter
	IngestErrors    *prometheus.CounterVec
	StoreAttempts   prometheus.Gauge
	StoreBytes      prometheus.Gauge
	StoreDiskBytes  prometheus.Gauge

	SchedulerUp *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		RecordsReceived: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "follower", Name: "records_received_total",
			Help: "Decision records received from the scheduler's record stream.",
		}),
		RecordsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "follower", Name: "records_lost_total",
			Help: "Decision records the scheduler dropped before the sidecar could read them.",
		}),
		Relists: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "follower", Name: "relists_total",
			Help: "Relists after the scheduler answered 410 Gone.",
		}),
		EpochChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "follower", Name: "epoch_changes_total",
			Help: "Times the record stream's epoch changed (scheduler restart or new leader).",
		}),
		IngestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "follower", Name: "ingest_errors_total",
			Help: "Errors while following the record stream, by stage (connect, decode, store).",
		}, []string{"stage"}),
		StoreAttempts: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "store", Name: "attempts",
			Help: "Scheduling attempts recorded in the store, repeats folded into another attempt included.",
		}),
		StoreBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "store", Name: "records_bytes",
			Help: "Size of the stored (compressed) decision records.",
		}),
		StoreDiskBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "store", Name: "disk_bytes",
			Help: "Size of the store's files on disk: the database (records and indexes) and its write-ahead log.",
		}),
		SchedulerUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "scheduler", Name: "up",
			Help: "Whether the scheduler's health endpoint answered 200 on the last probe, by probe (liveness, readiness).",
		}, []string{"probe"}),
	}
	for _, stage := range []string{StageConnect, StageDecode, StageStore} {
		m.IngestErrors.WithLabelValues(stage)
	}
	reg.MustRegister(m.RecordsReceived, m.RecordsLost, m.Relists, m.EpochChanges, m.IngestErrors,
		m.StoreAttempts, m.StoreBytes, m.StoreDiskBytes, m.SchedulerUp)
	return m
}

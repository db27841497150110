// Package health measures the cluster's scheduling health from client-go
// informers on pods, nodes and events (pending pods by profile and age, time
// to schedule, scheduling events, cordoned and tainted nodes, requested
// against allocatable resources) and probes the scheduler's health
// endpoints, exporting everything as Prometheus metrics.
package health

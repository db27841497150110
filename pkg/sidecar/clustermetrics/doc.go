// Package clustermetrics exports the scheduling health that the cluster's
// own objects show and that neither kube-state-metrics nor the scheduler's
// /metrics/resources endpoint export: pending pods by scheduler profile and
// age, time from creation to scheduling, and scheduling events by reason. It
// reads client-go informers on pods and events.
package clustermetrics

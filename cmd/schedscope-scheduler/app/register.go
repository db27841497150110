package app

// What kube-scheduler's main registers by importing it: the json log format
// (--logging-format=json), client-go's rest_client_* metrics and the
// kubernetes_build_info metric. They are imported here rather than in a main
// package so that every scheduler built with NewSchedulerCommand has them.
import (
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
)

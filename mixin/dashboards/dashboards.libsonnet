// The Grafana dashboards of the mixin.
(import 'schedscope.libsonnet')

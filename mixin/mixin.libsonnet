// schedscope's monitoring mixin: prometheusAlerts (the alert rules) and
// grafanaDashboards, configured by _config (config.libsonnet).
(import 'config.libsonnet') +
(import 'alerts/alerts.libsonnet') +
(import 'dashboards/dashboards.libsonnet')

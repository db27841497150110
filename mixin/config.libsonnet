// The mixin's configuration. Override any field with
//   (import 'mixin.libsonnet') + { _config+:: { clusterLabel: 'k8s_cluster' } }
{
  _config+:: {
    // The selectors of the scheduler's and the sidecar's scrape targets:
    // the jobs the chart's ServiceMonitor names.
    schedulerSelector: 'job="schedscope-scheduler"',
    sidecarSelector: 'job="schedscope-sidecar"',

    // The label that tells clusters apart where one Prometheus (or
    // Thanos, or Mimir) holds the series of several: alerts keep it and
    // name it, and the dashboard's cluster variable selects it. Series
    // without it match the variable's empty value.
    clusterLabel: 'cluster',

    // The release whose docs/runbooks.md the alerts' runbook_url links:
    // the chart's appVersion (test/chart and test/docs fail when they
    // differ).
    version: 'v0.1.0',
    // Where the runbooks are; each alert's runbook_url is this with
    // #<the alert's name in lower case>.
    runbookURL: 'https://github.com/schedscope/schedscope/blob/%s/docs/runbooks.md' % self.version,

    dashboard: {
      uid: 'schedscope',
      title: 'schedscope',
      tags: ['kubernetes', 'scheduler', 'schedscope'],
      timezone: 'browser',
      refresh: '30s',
      // The link variables' defaults, editable on the dashboard: the
      // sidecar's web page at the port-forward of docs/deploy.md, and the
      // trace UI (the chart's tracing.jaegerURL) on Jaeger's query port.
      sidecarURL: 'https://127.0.0.1:10263/',
      traceURL: 'http://localhost:16686',
    },
  },
}

// The schedscope dashboard: the scheduler's decisions and the sidecar's
// health, in the cluster the cluster variable selects.
{
  local c = self._config,
  local d = c.dashboard,
  local datasource = { type: 'prometheus', uid: '${datasource}' },
  local inCluster = '%s="$cluster"' % c.clusterLabel,
  // The matchers of the scheduler's and the sidecar's series, without and
  // with the profile variable.
  local scheduler = '%s, %s' % [inCluster, c.schedulerSelector],
  local sidecar = '%s, %s' % [inCluster, c.sidecarSelector],
  local schedulerProfile = scheduler + ', profile=~"$profile"',
  local sidecarProfile = sidecar + ', profile=~"$profile"',

  local target(refId, expr, legend) = {
    refId: refId,
    expr: expr,
    legendFormat: legend,
    datasource: datasource,
  },
  local panel(id, type, title, description, gridPos, unit, targets) = {
    id: id,
    type: type,
    title: title,
    description: description,
    datasource: datasource,
    gridPos: gridPos,
    fieldConfig: { defaults: { unit: unit }, overrides: [] },
    targets: targets,
  },
  local stat(id, title, description, x, unit, targets) =
    panel(id, 'stat', title, description, { x: x, y: 0, w: 6, h: 4 }, unit, targets),
  local timeseries(id, title, description, x, y, unit, targets) =
    panel(id, 'timeseries', title, description, { x: x, y: y, w: 12, h: 8 }, unit, targets) + {
      options: {
        legend: { displayMode: 'table', placement: 'right', calcs: ['lastNotNull', 'max'] },
        tooltip: { mode: 'multi' },
      },
    },
  local statOptions(graphMode) = {
    colorMode: 'background',
    graphMode: graphMode,
    textMode: 'value_and_name',
    reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
  },
  local thresholds(steps) = {
    thresholds: { mode: 'absolute', steps: steps },
    color: { mode: 'thresholds' },
  },
  local quantiles(metric, matchers, qs) = [
    target(
      std.char(std.codepoint('A') + i),
      'histogram_quantile(%s, sum by (le, profile) (rate(%s{%s}[$__rate_interval])))' % [qs[i], metric, matchers],
      'p%d {{profile}}' % (std.parseJson(qs[i]) * 100),
    )
    for i in std.range(0, std.length(qs) - 1)
  ],
  // A link variable: a text box whose default is the configured address.
  local textbox(name, label, description, value) = {
    name: name,
    type: 'textbox',
    label: label,
    description: description,
    query: value,
    current: { text: value, value: value },
    options: [{ selected: true, text: value, value: value }],
    hide: 0,
  },

  grafanaDashboards+:: {
    'schedscope-dashboard.json': {
      title: d.title,
      description: "schedscope: the scheduler's decisions and the sidecar's health in one cluster. Alerts: charts/schedscope/files/schedscope.rules.yaml; their runbooks: docs/runbooks.md. The links open the sidecar's web page and the trace UI at the sidecar_url and trace_url variables: set them to your addresses on the dashboard or in its settings.",
      uid: d.uid,
      tags: d.tags,
      timezone: d.timezone,
      schemaVersion: 39,
      version: 1,
      editable: true,
      refresh: d.refresh,
      time: { from: 'now-1h', to: 'now' },
      templating: {
        list: [
          {
            name: 'datasource',
            type: 'datasource',
            query: 'prometheus',
            label: 'Data source',
            current: {},
          },
          {
            name: 'cluster',
            type: 'query',
            datasource: datasource,
            query: 'label_values(up{%s}, %s)' % [c.schedulerSelector, c.clusterLabel],
            current: {},
            refresh: 2,
            label: 'Cluster',
            description: "The cluster whose scheduler and sidecar the panels show: the values of the %s label on the scheduler's targets. Where the series have no such label (one Prometheus per cluster), the variable is empty and selects them." % c.clusterLabel,
          },
          {
            name: 'profile',
            type: 'query',
            datasource: datasource,
            query: 'label_values(schedscope_attempts_total{%s}, profile)' % scheduler,
            includeAll: true,
            multi: true,
            allValue: '.*',
            current: {},
            refresh: 2,
            label: 'Profile',
            description: "The scheduler's profiles (spec.schedulerName) that have made attempts.",
          },
          textbox(
            'sidecar_url',
            'Sidecar web page',
            "Where a browser reaches the sidecar's web page. The default is the port-forward of docs/deploy.md (kubectl -n schedscope port-forward svc/schedscope-sidecar 10263:443); type your own address here, or save it in the dashboard's settings.",
            d.sidecarURL,
          ),
          textbox(
            'trace_url',
            'Trace UI',
            "The trace UI (Jaeger) the scheduler's traces go to: the chart's tracing.jaegerURL, the sidecar's --jaeger-url. The default is Jaeger's query port on this machine; type your own address here, or save it in the dashboard's settings.",
            d.traceURL,
          ),
        ],
      },
      annotations: { list: [] },
      links: [
        {
          title: 'schedscope web page',
          type: 'link',
          url: '${sidecar_url}',
          icon: 'external link',
          targetBlank: true,
          tooltip: "The sidecar's web page: pending pods, attempts, nodes by verdict (variable sidecar_url)",
        },
        {
          title: 'Traces',
          type: 'link',
          url: '${trace_url}',
          icon: 'external link',
          targetBlank: true,
          tooltip: 'The trace UI the scheduler exports to (variable trace_url)',
        },
      ],
      panels: [
        stat(1, 'Scheduler and sidecar up', "1 is up, 0 down. liveness and readiness: the scheduler's endpoints as the sidecar probes them (1 when they answered 200 on the last probe). scrape: whether Prometheus reached the scheduler's and the sidecar's /metrics. Alerts: SchedscopeSchedulerDown, SchedscopeSidecarDown, SchedscopeSchedulerUnhealthy.", 0, 'none', [
          target('A', 'min by (probe) (schedscope_scheduler_up{%s})' % sidecar, '{{probe}}'),
          target('B', 'min by (job) (up{%s})' % scheduler, 'scrape {{job}}'),
          target('C', 'min by (job) (up{%s})' % sidecar, 'scrape {{job}}'),
        ]) + {
          fieldConfig+: { defaults+: {
            min: 0,
            max: 1,
            mappings: [{ type: 'value', options: { '0': { text: 'down', index: 0 }, '1': { text: 'up', index: 1 } } }],
          } + thresholds([{ color: 'red', value: null }, { color: 'green', value: 1 }]) },
          options: statOptions('none'),
        },
        stat(2, 'Pending pods', 'Pods of the profile not bound to a node (from the sidecar).', 6, 'none', [
          target('A', 'sum(schedscope_cluster_pending_pods{%s})' % sidecarProfile, 'pending'),
        ]),
        stat(3, 'Attempts / s', 'Scheduling attempts by result.', 12, 'ops', [
          target('A', 'sum(rate(schedscope_attempts_total{%s, result="scheduled"}[$__rate_interval]))' % schedulerProfile, 'scheduled'),
          target('B', 'sum(rate(schedscope_attempts_total{%s, result="unschedulable"}[$__rate_interval]))' % schedulerProfile, 'unschedulable'),
        ]),
        stat(4, 'Records and spans lost / s', "Should be 0 (green); red above 0.001/s, about one in a quarter hour. Records dropped: the scheduler's record queue overflowed (SchedscopeRecordsDropped). Records lost by the sidecar: the record stream's buffer overwrote them before the sidecar read them (SchedscopeSidecarLosingRecords). Spans dropped or failed: the trace export queue overflowed, or exports to the collector failed (SchedscopeTraceExportFailing).", 18, 'ops', [
          target('A', 'sum(rate(schedscope_record_dropped_total{%s}[$__rate_interval]))' % scheduler, 'records dropped'),
          target('B', 'sum(rate(schedscope_follower_records_lost_total{%s}[$__rate_interval]))' % sidecar, 'records lost by the sidecar'),
          target('C', 'sum(rate(schedscope_trace_spans_dropped_total{%s}[$__rate_interval]))' % scheduler, 'spans dropped'),
          target('D', 'sum(rate(schedscope_trace_spans_export_failed_total{%s}[$__rate_interval]))' % scheduler, 'spans export failed'),
        ]) + {
          fieldConfig+: { defaults+: { min: 0 } + thresholds([{ color: 'green', value: null }, { color: 'red', value: 0.001 }]) },
          options: statOptions('area'),
        },
        timeseries(5, 'Attempts by result', 'Scheduling attempts per second, by profile and result.', 0, 4, 'ops', [
          target('A', 'sum by (profile, result) (rate(schedscope_attempts_total{%s}[$__rate_interval]))' % schedulerProfile, '{{profile}} {{result}}'),
        ]),
        timeseries(6,
                   'Attempt latency',
                   'From the start of the scheduling cycle to the end of the attempt (binding included).',
                   12,
                   4,
                   's',
                   quantiles('schedscope_attempt_duration_seconds_bucket', schedulerProfile, ['0.5', '0.99'])),
        timeseries(7,
                   'Queue wait',
                   'Time pods spent in the scheduling queue before an attempt.',
                   0,
                   12,
                   's',
                   quantiles('schedscope_attempt_queue_wait_seconds_bucket', schedulerProfile, ['0.5', '0.99'])),
        timeseries(8, 'Rejections by plugin', 'Unschedulable attempts per second, once for each plugin that rejected a node or the pod.', 12, 12, 'ops', [
          target('A', 'sum by (plugin) (rate(schedscope_attempt_unschedulable_by_plugin_total{%s}[$__rate_interval]))' % schedulerProfile, '{{plugin}}'),
        ]),
        timeseries(9, 'Pending pods by age', "Pods not bound to a node, by how long they have waited (from the sidecar's informers).", 0, 20, 'none', [
          target('A', 'sum by (age) (schedscope_cluster_pending_pods{%s})' % sidecarProfile, '{{age}}'),
        ]),
        timeseries(10, 'Filter rejections by plugin', 'Nodes rejected per second by each Filter plugin, by status code.', 12, 20, 'ops', [
          target('A', 'sum by (plugin, code) (rate(schedscope_filter_verdicts_total{%s, code!="Success"}[$__rate_interval]))' % schedulerProfile, '{{plugin}} {{code}}'),
        ]),
        timeseries(11, 'Plugin time p99', 'Time a plugin took at an extension point in one attempt (summed over nodes for Filter and Score).', 0, 28, 's', [
          target('A', 'histogram_quantile(0.99, sum by (le, plugin, extension_point) (rate(schedscope_plugin_duration_seconds_bucket{%s}[$__rate_interval])))' % schedulerProfile, '{{extension_point}} {{plugin}}'),
        ]),
        timeseries(12,
                   'Pod scheduling duration',
                   'Pod creation to PodScheduled, as the sidecar sees pods get their node.',
                   12,
                   28,
                   's',
                   quantiles('schedscope_pod_scheduling_duration_seconds_bucket', sidecarProfile, ['0.5', '0.9'])),
      ],
    },
  },
}

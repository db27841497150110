// schedscope's alert rules. Every alert keeps the cluster label of its
// series, waits `for:` before it fires, and links its section of
// docs/runbooks.md at the configured release.
{
  local c = self._config,
  // Where the alert's series come from, for its description: the pod and,
  // when the series has one, the cluster.
  local inCluster = '{{ with $labels.%s }} in cluster {{ . }}{{ end }}' % c.clusterLabel,
  local pod = '{{ $labels.namespace }}/{{ $labels.pod }}' + inCluster,
  local alert(name, severity, expr, forDuration, summary, description) = {
    alert: name,
    expr: expr,
    'for': forDuration,
    labels: { severity: severity },
    annotations: {
      summary: summary,
      description: description,
      runbook_url: '%s#%s' % [c.runbookURL, std.asciiLower(name)],
    },
  },
  // The target is down, or Prometheus has no such target at all (absent
  // keeps the selector's equality matchers as labels, not the cluster).
  local down(selector) = |||
    up{%(s)s} == 0
      or
    absent(up{%(s)s})
  ||| % { s: selector },
  local target(what) =
    "Prometheus has not scraped the %s's /metrics (job {{ $labels.job }}{{ with $labels.pod }}, pod {{ $labels.namespace }}/{{ . }}{{ end }}%s) for 5 minutes, or finds no such target." % [what, '{{ with $labels.%s }}, cluster {{ . }}{{ end }}' % c.clusterLabel],

  prometheusAlerts+:: {
    groups+: [{
      name: 'schedscope',
      rules: [
        alert(
          'SchedscopeSchedulerDown',
          'critical',
          down(c.schedulerSelector),
          '5m',
          'schedscope-scheduler is down or not scraped.',
          target('scheduler') + ' Pods whose spec.schedulerName is a schedscope profile are not scheduled while the scheduler is down.',
        ),
        alert(
          'SchedscopeRecordsDropped',
          'warning',
          'increase(schedscope_record_dropped_total{%s}[10m]) > 0\n' % c.schedulerSelector,
          '15m',
          'The scheduler keeps dropping decision records.',
          'For 15 minutes the scheduler of ' + pod + ' has dropped decision records in every 10-minute window: {{ $value | humanize }} scheduling attempts did not become records in the last 10 minutes. Scheduling is not affected; those attempts are missing from the record stream and the sidecar.',
        ),
        alert(
          'SchedscopeSidecarLosingRecords',
          'warning',
          'increase(schedscope_follower_records_lost_total{%s}[10m]) > 0\n' % c.sidecarSelector,
          '15m',
          'The sidecar keeps losing decision records.',
          'For 15 minutes the sidecar of ' + pod + " has lost decision records in every 10-minute window: {{ $value | humanize }} in the last 10 minutes, which the scheduler's stream buffer overwrote before the sidecar read them. The explain API has no record of those attempts.",
        ),
        alert(
          'SchedscopeTraceExportFailing',
          'warning',
          |||
            increase(schedscope_trace_spans_export_failed_total{%(s)s}[10m]) > 0
              or
            increase(schedscope_trace_attempts_skipped_total{%(s)s}[10m]) > 0
          ||| % { s: c.schedulerSelector },
          '10m',
          "The scheduler's traces do not reach the collector.",
          'For 10 minutes the scheduler of ' + pod + ' has failed to export spans, or has skipped tracing attempts because their spans could not have been exported. Scheduling goes on; the affected attempts have no trace.',
        ),
        alert(
          'SchedscopePodsPendingLong',
          'warning',
          |||
            sum without (age) (schedscope_cluster_pending_pods{%s, age=~"30m-2h|2h\\+"}) > 0
          ||| % c.sidecarSelector,
          '15m',
          'Pods have been pending for more than 30 minutes.',
          '{{ $value | humanize }} pods with spec.schedulerName {{ $labels.profile }} have been waiting for a node for more than 30 minutes (as the sidecar of ' + pod + ' counts them).',
        ),
        alert(
          'SchedscopeSidecarIngestErrors',
          'warning',
          'rate(schedscope_follower_ingest_errors_total{%s}[5m]) > 0\n' % c.sidecarSelector,
          '10m',
          'The sidecar fails to follow the record stream.',
          'The sidecar of ' + pod + " has had errors at stage {{ $labels.stage }} while following the scheduler's record stream for 10 minutes. While it fails, new decision records are not stored.",
        ),
        alert(
          'SchedscopeSidecarDown',
          'warning',
          down(c.sidecarSelector),
          '5m',
          'schedscope-sidecar is down or not scraped.',
          target('sidecar') + " Scheduling goes on. If the sidecar itself is down, the explain API and the web page are unavailable, and records the scheduler's buffer overwrites meanwhile are lost.",
        ),
        // The scheduler's /healthz or /readyz as the sidecar probes them,
        // on the pod's loopback. Silent while SchedscopeSchedulerDown's
        // target is down in the same pod of the same cluster, which says
        // more.
        alert(
          'SchedscopeSchedulerUnhealthy',
          'warning',
          |||
            (schedscope_scheduler_up{%(sidecar)s} == 0)
              unless on (%(cluster)s, namespace, pod)
            (up{%(scheduler)s} == 0)
          ||| % { sidecar: c.sidecarSelector, scheduler: c.schedulerSelector, cluster: c.clusterLabel },
          '5m',
          "The scheduler's {{ $labels.probe }} probe fails.",
          'For 5 minutes the sidecar of ' + pod + " has seen the scheduler's {{ $labels.probe }} endpoint answer something other than 200, while Prometheus can still scrape the scheduler.",
        ),
      ],
    }],
  },
}

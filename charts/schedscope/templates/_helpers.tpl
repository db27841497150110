{{/* The chart's name: nameOverride, or the chart's. */}}
{{- define "schedscope.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/* The prefix of every object's name: fullnameOverride, or the release's
name followed by the chart's name unless the release's name contains it
(release schedscope: schedscope). */}}
{{- define "schedscope.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "schedscope.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/* Labels of every object. */}}
{{- define "schedscope.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "schedscope.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: schedscope
{{- end }}

{{/* Labels that select the pod. */}}
{{- define "schedscope.selectorLabels" -}}
app.kubernetes.io/name: {{ include "schedscope.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* An image reference: pass (list $ .Values.scheduler.image). */}}
{{- define "schedscope.image" -}}
{{- $root := index . 0 -}}
{{- printf "%s:%s" (index . 1).repository ($root.Values.image.tag | default $root.Chart.AppVersion) -}}
{{- end }}

{{/* The scheduler's image: scheduler.image.tag when set, else the release's
tag followed by -k8s<minor> of the cluster's Kubernetes minor
(.Capabilities.KubeVersion), which must be one the release is built for. */}}
{{- define "schedscope.schedulerImage" -}}
{{- $image := .Values.scheduler.image -}}
{{- if $image.tag -}}
{{- printf "%s:%s" $image.repository $image.tag -}}
{{- else -}}
{{- $minor := printf "%s.%s" .Capabilities.KubeVersion.Major (trimSuffix "+" .Capabilities.KubeVersion.Minor) -}}
{{- $minors := splitList " " (index .Chart.Annotations "schedscope.io/kubernetes-minors") -}}
{{- if not (has $minor $minors) -}}
{{- fail (printf "schedscope-scheduler is built for Kubernetes %s; this cluster is %s: set scheduler.image.tag to an image built for it" (join ", " $minors) .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- printf "%s:%s-k8s%s" $image.repository (.Values.image.tag | default .Chart.AppVersion) $minor -}}
{{- end -}}
{{- end }}

{{/* The Service's DNS name, which the sidecar's certificate names. */}}
{{- define "schedscope.sidecarHost" -}}
{{ include "schedscope.fullname" . }}-sidecar.{{ .Release.Namespace }}.svc
{{- end }}

{{/* The scheduler's metrics Service's DNS name, which the serving certificate names too. */}}
{{- define "schedscope.schedulerMetricsHost" -}}
{{ include "schedscope.fullname" . }}-scheduler-metrics.{{ .Release.Namespace }}.svc
{{- end }}

{{/* Labels that select the serve-only API's pods (api.enabled): not the scheduler's pod. */}}
{{- define "schedscope.apiSelectorLabels" -}}
app.kubernetes.io/name: {{ include "schedscope.name" . }}-api
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The Service the APIService sends the kube-apiserver to: the API's with api.enabled, else the sidecar's. */}}
{{- define "schedscope.apiServiceName" -}}
{{- include "schedscope.fullname" . -}}{{- if .Values.api.enabled -}}-api{{- else -}}-sidecar{{- end -}}
{{- end }}

{{/* The DNS names the serving certificate covers, the APIService's Service first, the scheduler's metrics Service last. */}}
{{- define "schedscope.dnsNames" -}}
{{- $fullname := include "schedscope.fullname" . -}}
{{- $names := list -}}
{{- if .Values.api.enabled -}}
{{- $names = list (printf "%s-api.%s.svc" $fullname .Release.Namespace) (printf "%s-api.%s" $fullname .Release.Namespace) -}}
{{- end -}}
{{- $names = concat $names (list (include "schedscope.sidecarHost" .) (printf "%s-sidecar.%s" $fullname .Release.Namespace) (include "schedscope.schedulerMetricsHost" .)) -}}
{{- toJson $names -}}
{{- end }}

{{/* The PostgreSQL store's URL and password, from the Secret, as env of a container. */}}
{{- define "schedscope.storeEnv" -}}
{{- $pg := .Values.sidecar.store.postgres -}}
# The URL, without a password, expanded into --store; the password
# reaches libpq's PGPASSWORD only, never the command line.
- name: SCHEDSCOPE_STORE
  valueFrom:
    secretKeyRef:
      name: {{ $pg.secretName }}
      key: {{ $pg.urlKey }}
{{- with $pg.passwordKey }}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $pg.secretName }}
      key: {{ . }}
{{- end }}
{{- if $pg.caSecret }}
# libpq's sslrootcert and, unless the URL says otherwise, sslmode.
- name: PGSSLROOTCERT
  value: /etc/schedscope/postgres-ca/ca.crt
- name: PGSSLMODE
  value: verify-full
{{- end }}
{{- end }}

{{/* The mount of the PostgreSQL server's CA, with sidecar.store.postgres.caSecret. */}}
{{- define "schedscope.storeCAMount" -}}
{{- if and (eq .Values.sidecar.store.type "postgres") .Values.sidecar.store.postgres.caSecret -}}
- name: postgres-ca
  mountPath: /etc/schedscope/postgres-ca
  readOnly: true
{{- end -}}
{{- end }}

{{/* The volume of the PostgreSQL server's CA. */}}
{{- define "schedscope.storeCAVolume" -}}
{{- if and (eq .Values.sidecar.store.type "postgres") .Values.sidecar.store.postgres.caSecret -}}
- name: postgres-ca
  secret:
    secretName: {{ .Values.sidecar.store.postgres.caSecret }}
    items:
    - key: ca.crt
      path: ca.crt
{{- end -}}
{{- end }}

{{/* The Secret holding the sidecar's serving certificate. */}}
{{- define "schedscope.tlsSecret" -}}
{{- if eq .Values.apiService.certificate.source "secret" -}}
{{ required "apiService.certificate.secretName is required with source secret" .Values.apiService.certificate.secretName }}
{{- else -}}
{{ include "schedscope.fullname" . }}-sidecar-tls
{{- end -}}
{{- end }}

{{/* Fails on combinations of values that cannot work; values.schema.json checks each value alone. */}}
{{- define "schedscope.validate" -}}
{{- $s := .Values.scheduler -}}
{{- if and (gt (int $s.replicas) 1) (not $s.leaderElection.enabled) -}}
{{- fail "scheduler.replicas > 1 needs scheduler.leaderElection.enabled: two active schedulers would bind the same pods" -}}
{{- end -}}
{{- if and .Values.sidecar.persistence.enabled (eq .Values.sidecar.store.type "postgres") -}}
{{- fail "sidecar.persistence.enabled is the SQLite file's volume: with sidecar.store.type postgres there is no volume to keep" -}}
{{- end -}}
{{- if and .Values.sidecar.persistence.enabled (gt (int $s.replicas) 1) -}}
{{- fail "sidecar.persistence.enabled needs scheduler.replicas 1: the database is one file on one claim, with one writer" -}}
{{- end -}}
{{- $r := .Values.sidecar.retention -}}
{{- if and (gt (int64 $r.maxBytes) 0) (gt (int64 $r.maxAttemptsPerNamespace) (div (int64 $r.maxBytes) 19088)) -}}
{{- fail (printf "sidecar.retention.maxAttemptsPerNamespace %d does not fit sidecar.retention.maxBytes %d: at 19088 bytes on disk per attempt of a busy cluster, at most %d attempts do; set at most that, or 0" (int64 $r.maxAttemptsPerNamespace) (int64 $r.maxBytes) (div (int64 $r.maxBytes) 19088)) -}}
{{- end -}}
{{- if and .Values.tracing.enabled (not .Values.tracing.endpoint) -}}
{{- fail "tracing.enabled needs tracing.endpoint, the host:port of an OTLP gRPC receiver" -}}
{{- end -}}
{{- if and .Values.tracing.insecure .Values.tracing.tlsSecret -}}
{{- fail "tracing.insecure is plain gRPC and excludes tracing.tlsSecret" -}}
{{- end -}}
{{- if and .Values.tracing.clientCertificate (not .Values.tracing.tlsSecret) -}}
{{- fail "tracing.clientCertificate needs tracing.tlsSecret, the Secret holding tls.crt and tls.key" -}}
{{- end -}}
{{- if and .Values.apiService.enabled (eq .Values.apiService.certificate.source "secret") (not .Values.apiService.certificate.caBundle) -}}
{{- fail "apiService.certificate.source secret needs apiService.certificate.caBundle, the PEM of the CA that issued the Secret's certificate" -}}
{{- end -}}
{{- if and .Values.serviceMonitor.enabled (eq .Values.apiService.certificate.source "secret") (not .Values.apiService.certificate.caBundle) -}}
{{- fail "serviceMonitor.enabled with apiService.certificate.source secret needs apiService.certificate.caBundle, the CA Prometheus verifies the sidecar with" -}}
{{- end -}}
{{- include "schedscope.validateShadows" . -}}
{{- end }}

{{/* Fails on a shadow the scheduler would refuse at start (as
observe.CheckShadows does), naming it: one whose profile or live profile is
not a profile of scheduler.config, one that shadows itself, one declared
twice, one whose live profile is itself a shadow. */}}
{{- define "schedscope.validateShadows" -}}
{{- $profiles := list -}}
{{- range .Values.scheduler.config.profiles -}}
{{- $profiles = append $profiles .schedulerName -}}
{{- end -}}
{{- $shadows := list -}}
{{- range .Values.scheduler.shadows -}}
{{- $shadows = append $shadows .profile -}}
{{- end -}}
{{- $seen := list -}}
{{- range .Values.scheduler.shadows -}}
{{- if has .profile $seen -}}
{{- fail (printf "scheduler.shadows: shadow profile %q: declared more than once" .profile) -}}
{{- else if eq .profile .of -}}
{{- fail (printf "scheduler.shadows: shadow profile %q: shadows itself" .profile) -}}
{{- else if not (has .profile $profiles) -}}
{{- fail (printf "scheduler.shadows: shadow profile %q: no profile of scheduler.config has that schedulerName (its profiles: %s)" .profile (join ", " $profiles)) -}}
{{- else if not (has .of $profiles) -}}
{{- fail (printf "scheduler.shadows: shadow profile %q: its live profile %q is not a profile of scheduler.config (its profiles: %s)" .profile .of (join ", " $profiles)) -}}
{{- else if has .of $shadows -}}
{{- fail (printf "scheduler.shadows: shadow profile %q: its live profile %q is itself a shadow" .profile .of) -}}
{{- end -}}
{{- $seen = append $seen .profile -}}
{{- end -}}
{{- end }}

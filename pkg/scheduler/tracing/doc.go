// Package tracing turns schedscope's decision records into OpenTelemetry
// traces. A finished scheduling attempt becomes one trace, built after the
// fact from the record's timestamps, so tracing costs the scheduling path
// nothing; the spans are exported over OTLP, gRPC or HTTP, behind a bounded
// queue that never blocks the caller.
//
// The configuration is the Kubernetes TracingConfiguration, read from the
// same file format as kube-apiserver's --tracing-config-file with a
// protocol field added; the OTEL_EXPORTER_OTLP_* variables set what the
// file does not. See docs/tracing.md for the precedence, the span model
// and the sampling rules.
package tracing

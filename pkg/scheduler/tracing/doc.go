// Package tracing turns schedscope's decision records into OpenTelemetry
// traces. A finished scheduling attempt becomes one trace, built after the
// fact from the record's timestamps, so tracing costs the scheduling path
// nothing; the spans are exported over OTLP gRPC behind a bounded queue that
// never blocks the caller.
//
// The configuration is the Kubernetes TracingConfiguration, read from the
// same file format as kube-apiserver's --tracing-config-file. See
// docs/tracing.md for the span model and the sampling rules.
package tracing

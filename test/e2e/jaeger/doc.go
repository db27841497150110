// Package jaeger tests schedscope's traces end to end: the tracing package
// exports attempts over OTLP to a real Jaeger (bin/jaeger, built by
// `make build-tools`), and the tests read them back through Jaeger's query
// API.
package jaeger

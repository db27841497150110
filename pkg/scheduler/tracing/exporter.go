package tracing

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	tracingapi "k8s.io/component-base/tracing/api/v1"
)

// The collectors of a configuration that sets no endpoint, in an
// environment that sets none either: a collector in the same pod.
const (
	DefaultEndpoint     = "localhost:4317"
	DefaultHTTPEndpoint = "localhost:4318"
)

// The environment variables of the OTLP exporter that set the endpoint,
// and those that set the connection's security. The SDK reads them;
// schedscope only looks whether they are set.
var (
	endpointVariables = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}
	securityVariables = []string{
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
		"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_KEY", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
	}
)

// anySet reports whether one of the environment variables names is set
// to a non-empty value.
func anySet(names []string) bool {
	for _, name := range names {
		if os.Getenv(name) != "" {
			return true
		}
	}
	return false
}

// newExporter returns the OTLP exporter of protocol (resolved by
// resolveProtocol) to cfg's endpoint. It sets only what the configuration
// sets, so that the SDK applies the OTEL_EXPORTER_OTLP_* variables to the
// rest:
//   - the endpoint of cfg; without one, the environment's, or else the
//     protocol's default endpoint;
//   - the connection's security of transport when any of its fields is
//     set; otherwise, when neither the endpoint nor the security comes from
//     the environment, plain text to loopback and TLS to any other host.
func newExporter(ctx context.Context, cfg *tracingapi.TracingConfiguration, protocol Protocol, transport Transport) (sdktrace.SpanExporter, error) {
	protocol, err := resolveProtocol(protocol)
	if err != nil {
		return nil, err
	}
	var endpoint string
	switch {
	case cfg.Endpoint != nil:
		endpoint = *cfg.Endpoint
	case anySet(endpointVariables):
		// The SDK reads the endpoint, and derives the security from its scheme.
	case protocol == ProtocolHTTPProtobuf:
		endpoint = DefaultHTTPEndpoint
	default:
		endpoint = DefaultEndpoint
	}
	var security *securityOption
	if transport != (Transport{}) || (endpoint != "" && !anySet(securityVariables)) {
		tlsConfig, err := transport.tlsConfig(endpoint)
		if err != nil {
			return nil, err
		}
		security = &securityOption{tls: tlsConfig}
	}
	if protocol == ProtocolHTTPProtobuf && strings.HasPrefix(endpoint, "unix:") {
		return nil, errors.New("tracing: OTLP/HTTP takes a host:port endpoint, not a unix socket")
	}
	var exporter sdktrace.SpanExporter
	// Both clients connect lazily: an unreachable collector is not an
	// error here, only failed exports later.
	if protocol == ProtocolHTTPProtobuf {
		exporter, err = otlptracehttp.New(ctx, httpOptions(endpoint, security)...)
	} else {
		exporter, err = otlptracegrpc.New(ctx, grpcOptions(endpoint, security)...)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP %s trace exporter: %w", protocol, err)
	}
	return exporter, nil
}

// securityOption is the connection's security set in code: TLS with tls,
// or plain text when tls is nil.
type securityOption struct {
	tls *tls.Config
}

// grpcOptions returns the gRPC exporter's options for endpoint (empty:
// the environment's) and security (nil: the environment's).
func grpcOptions(endpoint string, security *securityOption) []otlptracegrpc.Option {
	opts := []otlptracegrpc.Option{
		// gRPC waits up to two minutes between reconnections by default: a
		// collector back after a long outage would get no span for that
		// long. Exports fail and are counted meanwhile.
		otlptracegrpc.WithDialOption(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxReconnectDelay},
			MinConnectTimeout: 5 * time.Second,
		})),
	}
	if endpoint != "" {
		opts = append(opts, otlptracegrpc.WithEndpoint(endpoint))
	}
	if security != nil {
		// Credentials win over the insecure setting an endpoint's http://
		// scheme or OTEL_EXPORTER_OTLP_INSECURE implies, and over the
		// certificate variables: plain text is set as credentials too.
		creds := insecure.NewCredentials()
		if security.tls != nil {
			creds = credentials.NewTLS(security.tls)
		}
		opts = append(opts, otlptracegrpc.WithTLSCredentials(creds))
	}
	return opts
}

// httpOptions returns the HTTP exporter's options for endpoint (empty: the
// environment's) and security (nil: the environment's).
func httpOptions(endpoint string, security *securityOption) []otlptracehttp.Option {
	// The encoding follows the protocol resolved here, not the SDK's own
	// reading of the protocol variables.
	opts := []otlptracehttp.Option{otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf)}
	switch {
	case security == nil:
		if endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpoint(endpoint))
		}
		return opts
	case endpoint != "":
		// The URL's scheme decides between plain HTTP and HTTPS, whatever
		// the environment says.
		scheme := "http"
		if security.tls != nil {
			scheme = "https"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(scheme+"://"+endpoint+"/v1/traces"))
	case security.tls == nil:
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	// Setting the configuration, nil for plain HTTP, replaces one made
	// from the certificate variables.
	return append(opts, otlptracehttp.WithTLSClientConfig(security.tls))
}

package tracing_test

import (
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
)

// tenantHeader is the header the tests set through OTEL_EXPORTER_OTLP_*HEADERS.
const tenantHeader = "x-tenant"

// export is what a collector received in one request.
type export struct {
	Collector, Protocol, Tenant string
	Spans                       int
}

// collectors serve OTLP gRPC and OTLP/HTTP on loopback ports and keep what
// they receive.
type collectors struct {
	mu      sync.Mutex
	exports []export
}

func (c *collectors) add(e export) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exports = append(c.exports, e)
}

func (c *collectors) received() []export {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]export(nil), c.exports...)
}

// grpcCollector receives OTLP gRPC exports for collectors as name.
type grpcCollector struct {
	collectortrace.UnimplementedTraceServiceServer
	name string
	c    *collectors
}

func (g *grpcCollector) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	g.c.add(export{Collector: g.name, Protocol: "grpc", Tenant: strings.Join(md.Get(tenantHeader), ","), Spans: countSpans(req)})
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func countSpans(req *collectortrace.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}

// start serves collector name over gRPC, with opts, and plain HTTP until
// the test ends and returns their host:port addresses.
func (c *collectors) start(t *testing.T, name string, opts ...grpc.ServerOption) (grpcAddr, httpAddr string) {
	t.Helper()
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	collectortrace.RegisterTraceServiceServer(srv, &grpcCollector{name: name, c: c})
	go func() { _ = srv.Serve(grpcLis) }()
	t.Cleanup(srv.Stop)

	httpLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := &collectortrace.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(body, req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.add(export{Collector: name, Protocol: "http/protobuf", Tenant: r.Header.Get(tenantHeader), Spans: countSpans(req)})
		resp, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	})
	httpSrv := &http.Server{Handler: mux}
	go func() { _ = httpSrv.Serve(httpLis) }()
	t.Cleanup(func() { _ = httpSrv.Close() })
	return grpcLis.Addr().String(), httpLis.Addr().String()
}

// clearOTLPEnvironment unsets, for the test, the OTLP variables of the
// environment the tests run in.
func clearOTLPEnvironment(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "OTEL_EXPORTER_OTLP_") {
			t.Setenv(name, "") // restores the value when the test ends
			if err := os.Unsetenv(name); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// with returns a copy of env with name set to value.
func with(env map[string]string, name, value string) map[string]string {
	out := maps.Clone(env)
	out[name] = value
	return out
}

// TestExporterPrecedence: the configuration file's endpoint and protocol,
// and the transport's security, win over the OTEL_EXPORTER_OTLP_*
// variables; what they leave unset, the variables set, per-signal
// variables first.
func TestExporterPrecedence(t *testing.T) {
	c := &collectors{}
	fileGRPC, fileHTTP := c.start(t, "file")
	envGRPC, envHTTP := c.start(t, "env")
	otherGRPC, _ := c.start(t, "other")
	pki := newTestPKI(t)
	tlsGRPC, _ := c.start(t, "tls", pki.serverOption(t, true))
	certificateEnv := map[string]string{
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        pki.caFile,
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.clientCert,
		"OTEL_EXPORTER_OTLP_CLIENT_KEY":         pki.clientKey,
	}
	tests := []struct {
		name      string
		endpoint  *string
		protocol  tracing.Protocol
		transport tracing.Transport
		env       map[string]string
		want      export
	}{
		{
			name:     "file endpoint wins over the environment's",
			endpoint: &fileGRPC,
			env:      map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + envGRPC},
			want:     export{Collector: "file", Protocol: "grpc"},
		},
		{
			name: "endpoint from the environment",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + envGRPC},
			want: export{Collector: "env", Protocol: "grpc"},
		},
		{
			name: "traces endpoint wins over the general one",
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://" + otherGRPC,
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + envGRPC,
			},
			want: export{Collector: "env", Protocol: "grpc"},
		},
		{
			name: "protocol and endpoint from the environment",
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + envHTTP,
			},
			want: export{Collector: "env", Protocol: "http/protobuf"},
		},
		{
			name: "traces protocol wins over the general one",
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_PROTOCOL":        "grpc",
				"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
				"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://" + envHTTP,
			},
			want: export{Collector: "env", Protocol: "http/protobuf"},
		},
		{
			name:     "file protocol http/protobuf wins over the environment's",
			endpoint: &fileHTTP,
			protocol: tracing.ProtocolHTTPProtobuf,
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + envGRPC,
			},
			want: export{Collector: "file", Protocol: "http/protobuf"},
		},
		{
			name:     "file protocol grpc wins over the environment's",
			endpoint: &fileGRPC,
			protocol: tracing.ProtocolGRPC,
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + envHTTP,
			},
			want: export{Collector: "file", Protocol: "grpc"},
		},
		{
			name:     "headers from the environment over gRPC",
			endpoint: &fileGRPC,
			env:      map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": tenantHeader + "=blue"},
			want:     export{Collector: "file", Protocol: "grpc", Tenant: "blue"},
		},
		{
			name:     "traces headers from the environment over HTTP",
			endpoint: &fileHTTP,
			protocol: tracing.ProtocolHTTPProtobuf,
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_HEADERS":        tenantHeader + "=blue",
				"OTEL_EXPORTER_OTLP_TRACES_HEADERS": tenantHeader + "=green",
			},
			want: export{Collector: "file", Protocol: "http/protobuf", Tenant: "green"},
		},
		{
			name:      "insecure transport wins over an https endpoint over gRPC",
			transport: tracing.Transport{Insecure: true},
			env:       map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://" + envGRPC},
			want:      export{Collector: "env", Protocol: "grpc"},
		},
		{
			name:      "insecure transport wins over an https endpoint over HTTP",
			transport: tracing.Transport{Insecure: true},
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
				"OTEL_EXPORTER_OTLP_ENDPOINT": "https://" + envHTTP,
			},
			want: export{Collector: "env", Protocol: "http/protobuf"},
		},
		{
			name: "certificates and https endpoint from the environment",
			env:  with(certificateEnv, "OTEL_EXPORTER_OTLP_ENDPOINT", "https://"+tlsGRPC),
			want: export{Collector: "tls", Protocol: "grpc"},
		},
		{
			name:     "certificates from the environment to a loopback file endpoint",
			endpoint: &tlsGRPC,
			env:      certificateEnv,
			want:     export{Collector: "tls", Protocol: "grpc"},
		},
		{
			name:      "transport files win over OTEL_EXPORTER_OTLP_INSECURE",
			endpoint:  &tlsGRPC,
			transport: tracing.Transport{CAFile: pki.caFile, CertFile: pki.clientCert, KeyFile: pki.clientKey},
			env:       map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "true"},
			want:      export{Collector: "tls", Protocol: "grpc"},
		},
		{
			name:     "plain text to a loopback file endpoint despite an https endpoint of the environment",
			endpoint: &fileHTTP,
			protocol: tracing.ProtocolHTTPProtobuf,
			env:      map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://" + envHTTP},
			want:     export{Collector: "file", Protocol: "http/protobuf"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTLPEnvironment(t)
			for name, value := range tt.env {
				t.Setenv(name, value)
			}
			before := len(c.received())
			ctx := context.Background()
			tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{Endpoint: tt.endpoint, SamplingRatePerMillion: ptr.To[int32](1_000_000)},
				tracing.Options{Protocol: tt.protocol, Transport: tt.transport})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			rec := scheduledRecord("web-1", "uid-1")
			tr.Trace(podOf(rec, nil), rec)
			if err := tr.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			got := c.received()[before:]
			want := []export{tt.want}
			want[0].Spans = len(scheduledTree)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("exports (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExporterValidation: an unsupported protocol, from the options or
// from the environment, stops New with an error naming where it came from
// and the value; so do settings OTLP/HTTP cannot follow.
func TestExporterValidation(t *testing.T) {
	pki := newTestPKI(t)
	tests := []struct {
		name      string
		protocol  tracing.Protocol
		endpoint  string
		transport tracing.Transport
		env       map[string]string
		wantErr   []string
	}{
		{name: "options", protocol: "thrift", wantErr: []string{"protocol", `"thrift"`, `"grpc"`, `"http/protobuf"`}},
		{name: "general variable", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", `"http/json"`}},
		{
			name:    "traces variable",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "HTTP"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", `"HTTP"`},
		},
		{name: "HTTP to a unix socket", protocol: tracing.ProtocolHTTPProtobuf, endpoint: "unix:///run/otel.sock", wantErr: []string{"OTLP/HTTP", "unix socket"}},
		{
			name:      "HTTP with a CA file to an http:// endpoint of the environment",
			protocol:  tracing.ProtocolHTTPProtobuf,
			transport: tracing.Transport{CAFile: pki.caFile},
			env:       map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
			wantErr:   []string{"insecure HTTP endpoint cannot use TLS"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTLPEnvironment(t)
			for name, value := range tt.env {
				t.Setenv(name, value)
			}
			cfg := &tracingapi.TracingConfiguration{}
			if tt.endpoint != "" {
				cfg.Endpoint = &tt.endpoint
			}
			tr, err := tracing.New(context.Background(), cfg, tracing.Options{Protocol: tt.protocol, Transport: tt.transport})
			if err == nil {
				_ = tr.Shutdown(context.Background())
				t.Fatalf("New succeeded, want an error")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %s", err, want)
				}
			}
		})
	}
}

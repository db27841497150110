package framework

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"net"
	"sync"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// OTLPReceiver is a real OTLP gRPC trace receiver on loopback that keeps
// every span it receives.
type OTLPReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	// Addr is host:port, the endpoint of a TracingConfiguration.
	Addr   string
	server *grpc.Server

	mu       sync.Mutex
	spans    []*tracepb.Span
	resource []*commonpb.KeyValue
}

// StartOTLPReceiver starts a receiver on a free loopback port.
func StartOTLPReceiver() (*OTLPReceiver, error) {
	return StartOTLPReceiverAt("127.0.0.1:0")
}

// StartOTLPReceiverAt starts a receiver on addr, a loopback host:port: a
// collector coming back on the address it had.
func StartOTLPReceiverAt(addr string) (*OTLPReceiver, error) {
	return startOTLPReceiver(addr)
}

// StartOTLPReceiverTLS starts a receiver on a free loopback port that serves
// TLS with pki's serving certificate and requires a client certificate of
// pki's CA.
func StartOTLPReceiverTLS(pki *PKI) (*OTLPReceiver, error) {
	config := &tls.Config{
		Certificates: []tls.Certificate{pki.ServerCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pki.Pool,
		MinVersion:   tls.VersionTLS12,
	}
	return startOTLPReceiver("127.0.0.1:0", grpc.Creds(credentials.NewTLS(config)))
}

func startOTLPReceiver(addr string, opts ...grpc.ServerOption) (*OTLPReceiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &OTLPReceiver{Addr: ln.Addr().String(), server: grpc.NewServer(opts...)}
	collectortrace.RegisterTraceServiceServer(r.server, r)
	go func() { _ = r.server.Serve(ln) }()
	return r, nil
}

// Stop stops the receiver.
func (r *OTLPReceiver) Stop() { r.server.Stop() }

// Export implements the OTLP trace service.
func (r *OTLPReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		r.resource = rs.GetResource().GetAttributes()
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// ResourceAttributes returns the string attributes of the resource of the
// spans received last.
func (r *OTLPReceiver) ResourceAttributes() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	attrs := map[string]string{}
	for _, kv := range r.resource {
		if v, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_StringValue); ok {
			attrs[kv.GetKey()] = v.StringValue
		}
	}
	return attrs
}

// SpanCount returns the number of spans received.
func (r *OTLPReceiver) SpanCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.spans)
}

// SpanCounts returns the number of spans received per trace ID in hex.
func (r *OTLPReceiver) SpanCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := map[string]int{}
	for _, s := range r.spans {
		counts[hex.EncodeToString(s.TraceId)]++
	}
	return counts
}

// Trace returns the spans received for a trace ID in hex.
func (r *OTLPReceiver) Trace(traceID string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if hex.EncodeToString(s.TraceId) == traceID {
			out = append(out, s)
		}
	}
	return out
}

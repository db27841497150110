// Command otlpsink is an OTLP gRPC trace receiver that counts the spans it
// receives and keeps none. The overhead benchmark exports to it in its own
// process, as a scheduler exports to a collector, so that the collector's
// work is not counted as the scheduler's.
//
// It prints "listening on HOST:PORT" once it accepts exports, and on
// SIGTERM or SIGINT the spans received as {"spans": N}, then exits.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// sink counts the spans of every export.
type sink struct {
	collectortrace.UnimplementedTraceServiceServer
	spans atomic.Int64
}

// Export implements the OTLP trace service.
func (s *sink) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var n int64
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += int64(len(ss.Spans))
		}
	}
	s.spans.Add(n)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func main() {
	addr := flag.String("address", "127.0.0.1:0", "loopback host:port to listen on")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		log.Fatalf("--address %q: %v", *addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		log.Fatalf("--address %q: the sink listens on a loopback address only", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	s := &sink{}
	server := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(server, s)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		server.Stop()
	}()
	fmt.Printf("listening on %s\n", ln.Addr())
	if err := server.Serve(ln); err != nil {
		log.Fatal(err)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]int64{"spans": s.spans.Load()})
}

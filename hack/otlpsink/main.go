// Command otlpsink is an OTLP gRPC trace receiver that counts the spans it
// receives and keeps none. The overhead benchmark exports to it in its own
// process, as a scheduler exports to a collector, so that the collector's
// work is not counted as the scheduler's.
//
// It prints "listening on HOST:PORT" once it accepts exports, and on
// SIGTERM or SIGINT the spans received as {"spans": N}, then exits. With
// --stats-address it also answers GET / there with the counts so far,
// {"spans": N, "traces": M}, a trace counted by its root span.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// sink counts the spans of every export, and the root spans among them.
type sink struct {
	collectortrace.UnimplementedTraceServiceServer
	spans, traces atomic.Int64
}

// Export implements the OTLP trace service.
func (s *sink) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var spans, roots int64
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			spans += int64(len(ss.Spans))
			for _, span := range ss.Spans {
				if len(span.ParentSpanId) == 0 {
					roots++
				}
			}
		}
	}
	s.spans.Add(spans)
	s.traces.Add(roots)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// ServeHTTP answers with the counts so far.
func (s *sink) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int64{"spans": s.spans.Load(), "traces": s.traces.Load()})
}

func main() {
	addr := flag.String("address", "127.0.0.1:0", "loopback host:port to listen on")
	statsAddr := flag.String("stats-address", "", "loopback host:port to answer with the counts so far; empty: none")
	flag.Parse()
	ln, err := listenLoopback("--address", *addr)
	if err != nil {
		log.Fatal(err)
	}
	s := &sink{}
	if *statsAddr != "" {
		statsLn, err := listenLoopback("--stats-address", *statsAddr)
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			if err := http.Serve(statsLn, s); err != nil && !errors.Is(err, net.ErrClosed) {
				log.Fatal(err)
			}
		}()
	}
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

// listenLoopback listens on addr, the value of flag, which must be a
// loopback host:port.
func listenLoopback(flag, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%s %q: the sink listens on a loopback address only", flag, addr)
	}
	return net.Listen("tcp", addr)
}

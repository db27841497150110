package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/schedscope/schedscope/test/freeport"
)

// OTLPSink is hack/otlpsink running in its own process: an OTLP receiver
// that counts the spans it receives, as a collector would take them, with
// none of its work in the process that exports.
type OTLPSink struct {
	*Process
	// Addr is host:port, the endpoint of a TracingConfiguration.
	Addr     string
	statsURL string
}

// SinkStats is what an OTLPSink has received so far.
type SinkStats struct {
	Spans int64 `json:"spans"`
	// Traces counts root spans: one a traced scheduling attempt.
	Traces int64 `json:"traces"`
}

// StartOTLPSink starts bin/otlpsink on free loopback ports, its log in
// dir/name.log, and waits until it answers.
func StartOTLPSink(ctx context.Context, dir, name string) (*OTLPSink, error) {
	port, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	statsPort, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	s := &OTLPSink{Addr: fmt.Sprintf("127.0.0.1:%d", port), statsURL: fmt.Sprintf("http://127.0.0.1:%d/", statsPort)}
	s.Process, err = Start(dir, name, "otlpsink", "--address", s.Addr, "--stats-address", fmt.Sprintf("127.0.0.1:%d", statsPort))
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, s.Process, s.statsURL, nil, 30*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stats returns the counts so far.
func (s *OTLPSink) Stats() (SinkStats, error) {
	var st SinkStats
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(s.statsURL)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s: %s", s.statsURL, resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

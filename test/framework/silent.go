package framework

import (
	"net"
	"sync"
)

// SilentCollector accepts TCP connections on loopback and never reads from
// or writes to them: a trace collector that hangs.
type SilentCollector struct {
	// Addr is host:port, the endpoint of a TracingConfiguration.
	Addr     string
	listener net.Listener
	done     chan struct{}

	mu    sync.Mutex
	conns []net.Conn
}

// StartSilentCollector starts a silent collector on a free loopback port.
func StartSilentCollector() (*SilentCollector, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &SilentCollector{Addr: ln.Addr().String(), listener: ln, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.conns = append(c.conns, conn)
			c.mu.Unlock()
		}
	}()
	return c, nil
}

// Accepted returns the number of connections accepted.
func (c *SilentCollector) Accepted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns)
}

// Stop closes the listener and every connection it accepted.
func (c *SilentCollector) Stop() {
	_ = c.listener.Close()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

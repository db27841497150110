// Package freeport finds loopback TCP ports for the servers that tests
// start as processes of their own.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
)

// Ports are chosen below Linux's default ephemeral range (32768-60999),
// from which the kernel picks the local port of every outgoing
// connection, so that no connection of the tests' processes takes a port
// between Get's check and its server's listen.
const (
	low  = 10000
	high = 32767
)

// given are the ports Get has returned in this process, so that the
// servers one test starts at once never get the same port.
var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Get returns a TCP port on 127.0.0.1 that was free a moment ago, chosen
// at random below the ephemeral range, and not returned before in this
// process.
func Get() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	var lastErr error
	for range 100 {
		port := low + rand.IntN(high-low+1)
		if given[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			lastErr = err
			continue
		}
		ln.Close()
		given[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d after 100 tries: %w", low, high, lastErr)
}

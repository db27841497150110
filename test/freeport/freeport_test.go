package freeport

import (
	"fmt"
	"net"
	"testing"
)

// TestGetIsFreeAndBelowTheEphemeralRange: a port Get returns can be
// listened on, lies below the kernel's ephemeral range, and is not one it
// returned before.
func TestGetIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		port, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Errorf("port %d returned twice", port)
		}
		seen[port] = true
		if port < low || port > high {
			t.Errorf("port %d is outside %d-%d", port, low, high)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("listening on the port Get returned: %v", err)
		}
		ln.Close()
	}
}

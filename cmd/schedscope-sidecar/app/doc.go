// Package app is the schedscope-sidecar command: its options and flags,
// their validation, and Run, which wires the follower, the store, the
// explain API, the web page and the health metrics behind one secure,
// delegated-auth HTTPS server.
package app

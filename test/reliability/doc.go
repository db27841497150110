// Package reliability holds the long reliability tests: real etcd,
// kube-apiserver, plain kube-scheduler, schedscope-scheduler and its
// sidecar from bin/, at the scale the requirements name. The tests are
// built only with the reliability build tag, so that `go test ./...` leaves
// them out; `make test-reliability` runs them, alone on the machine, since
// they measure throughput and memory.
package reliability

// Package app is the kubectl-schedscope command: "kubectl
// schedscope explain pod/NAME" and "kubectl schedscope pending". It reads the
// sidecar's explain API through the kube-apiserver, which serves it as an
// aggregated API (or at a direct address), and prints tables, JSON or YAML,
// with exit codes a script can test.
package app

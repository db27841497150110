// Package app is the kubectl-schedscope command: "kubectl
// schedscope explain pod/NAME" (or a workload, deploy/web, or -l),
// "kubectl schedscope pending" and the others. It reads the
// sidecar's explain API through the kube-apiserver, which serves it as an
// aggregated API (or at a direct address), and prints tables, JSON or YAML,
// with exit codes a script can test.
package app

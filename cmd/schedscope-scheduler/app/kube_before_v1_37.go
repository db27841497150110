//go:build kube1.35 || kube1.36

package app

import "k8s.io/kubernetes/cmd/kube-scheduler/app/options"

// nameInformers does nothing: client-go's informers have no names before
// Kubernetes v1.37.
func nameInformers(*options.Options) error { return nil }

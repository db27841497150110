//go:build !kube1.35 && !kube1.36

package app

import (
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// nameInformers names the scheduler's shared informers in client-go's
// informer metrics, as kube-scheduler does from Kubernetes v1.37 on.
func nameInformers(opts *options.Options) error {
	if opts.InformerName != nil {
		return nil
	}
	informerName, err := cache.NewInformerName("schedscope-scheduler")
	if err != nil {
		return err
	}
	opts.InformerName = informerName
	return nil
}

// Package namespaces removes a namespace's records from the sidecar's store
// when the namespace is deleted, so that whoever creates a namespace of the
// same name later reads none of the records of the one before. It follows
// namespaces with a client-go informer.
package namespaces

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Store is what Forget needs of the store.
type Store interface {
	Namespaces(ctx context.Context) ([]string, error)
	DeleteNamespace(ctx context.Context, namespace string) (int, error)
}

// Forget deletes the records of a namespace from st as soon as the
// namespace is being deleted (it has a deletion timestamp) and again when it
// is gone, so that records of attempts still in flight then go too. Once
// the informer has synced, it also deletes the records of the stored
// namespaces that no longer exist. It returns after adding its handler;
// the work runs in the informer's goroutines until ctx ends. client
// confirms that a namespace the informer does not know is gone (not only
// created after the informer listed).
func Forget(ctx context.Context, informer coreinformers.NamespaceInformer, client corev1client.NamespacesGetter, st Store) error {
	f := &forgetter{ctx: ctx, st: st, client: client}
	reg, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.forgetIfDeleting(obj) },
		UpdateFunc: func(_, obj any) { f.forgetIfDeleting(obj) },
		DeleteFunc: f.forgetDeleted,
	})
	if err != nil {
		return fmt.Errorf("watching namespaces: %w", err)
	}
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			return
		}
		f.forgetAbsent(informer)
	}()
	return nil
}

type forgetter struct {
	ctx    context.Context
	st     Store
	client corev1client.NamespacesGetter
}

func (f *forgetter) forgetIfDeleting(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
		f.forget(ns.Name)
	}
}

func (f *forgetter) forgetDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		f.forget(ns.Name)
	}
}

// forgetAbsent forgets the stored namespaces the informer does not know:
// those deleted while the sidecar was away.
func (f *forgetter) forgetAbsent(informer coreinformers.NamespaceInformer) {
	stored, err := f.st.Namespaces(f.ctx)
	if err != nil {
		klog.FromContext(f.ctx).Error(err, "Listing the stored namespaces")
		return
	}
	for _, name := range stored {
		if _, err := informer.Lister().Get(name); err == nil {
			continue
		}
		_, err := f.client.Namespaces().Get(f.ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			f.forget(name)
		case err != nil:
			klog.FromContext(f.ctx).Error(err, "Checking whether a stored namespace still exists", "namespace", name)
		}
	}
}

func (f *forgetter) forget(name string) {
	logger := klog.FromContext(f.ctx)
	n, err := f.st.DeleteNamespace(f.ctx, name)
	if err != nil {
		logger.Error(err, "Deleting the records of a deleted namespace", "namespace", name)
		return
	}
	if n > 0 {
		logger.V(2).Info("Deleted the records of a deleted namespace", "namespace", name, "attempts", n)
	}
}

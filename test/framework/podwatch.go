package framework

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodWatch follows the pods of a namespace through an informer: the node
// each was first seen bound to, and when.
type PodWatch struct {
	informer cache.SharedIndexInformer
	// Stop ends the informer; it may be called more than once.
	Stop func()

	mu          sync.Mutex
	nodes       map[string]string
	first, last time.Time
}

// WatchPods starts an informer on the pods of namespace ns and waits until
// it has synced.
func WatchPods(ctx context.Context, client kubernetes.Interface, ns string) (*PodWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	w := &PodWatch{informer: factory.Core().V1().Pods().Informer(), nodes: map[string]string{}}
	w.Stop = sync.OnceFunc(func() { cancel(); factory.Shutdown() })
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	}); err != nil {
		w.Stop()
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
		w.Stop()
		return nil, fmt.Errorf("the pod informer of namespace %s did not sync", ns)
	}
	return w, nil
}

func (w *PodWatch) observe(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.nodes[pod.Name]; seen {
		return
	}
	w.nodes[pod.Name] = pod.Spec.NodeName
	if w.first.IsZero() {
		w.first = now
	}
	w.last = now
}

// Bound returns the number of pods seen bound.
func (w *PodWatch) Bound() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.nodes)
}

// BindTimes returns when the first and the last pod were seen bound.
func (w *PodWatch) BindTimes() (first, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first, w.last
}

// Node returns the node pod was bound to, or "".
func (w *PodWatch) Node(pod string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nodes[pod]
}

// Len returns the number of pods the informer holds now, bound or not.
func (w *PodWatch) Len() int { return len(w.informer.GetStore().ListKeys()) }

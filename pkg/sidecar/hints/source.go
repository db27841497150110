package hints

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
)

// byNode indexes pods by the node they are bound to.
const byNode = "schedscope.io/node"

// Source computes hints from the pods and nodes in informers' caches.
type Source struct {
	pods      corelisters.PodLister
	podsIndex cache.Indexer
	nodes     corelisters.NodeLister
	synced    []cache.InformerSynced
}

// NewSource returns a Source reading pods and nodes; it adds an index to
// the pod informer, so it must be called before the informers start.
func NewSource(pods coreinformers.PodInformer, nodes coreinformers.NodeInformer) (*Source, error) {
	if err := pods.Informer().AddIndexers(cache.Indexers{byNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing pods by node: %w", err)
	}
	return &Source{
		pods: pods.Lister(), podsIndex: pods.Informer().GetIndexer(), nodes: nodes.Lister(),
		synced: []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced},
	}, nil
}

// For returns the hints for attempt a, or nil when a did not fail for lack
// of a fitting node, the pod no longer waits (deleted, re-created or
// bound), or the caches have not synced yet.
func (s *Source) For(a *record.Attempt, showNodes bool) []v1alpha1.Hint {
	if a.Result != record.ResultUnschedulable {
		return nil
	}
	for _, synced := range s.synced {
		if !synced() {
			return nil
		}
	}
	pod, err := s.pods.Pods(a.Pod.Namespace).Get(a.Pod.Name)
	if err != nil || string(pod.UID) != a.Pod.UID || pod.Spec.NodeName != "" {
		return nil
	}
	nodes := map[string]Node{}
	for _, g := range a.Filter {
		if g.Verdict != record.VerdictRejected {
			continue
		}
		for _, name := range g.Nodes {
			node, err := s.nodes.Get(name)
			if err != nil {
				continue
			}
			objs, err := s.podsIndex.ByIndex(byNode, name)
			if err != nil {
				continue
			}
			n := Node{Node: node}
			for _, o := range objs {
				n.Pods = append(n.Pods, o.(*v1.Pod))
			}
			nodes[name] = n
		}
	}
	return Compute(a, pod, nodes, showNodes)
}

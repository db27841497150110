package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedscope/schedscope/pkg/stream"
)

// CreateNode creates node and sets its status: the capacity given, also as
// allocatable, room for 110 pods unless set, and Ready, since no kubelet
// runs to report it.
func CreateNode(ctx context.Context, client kubernetes.Interface, node *v1.Node, capacity v1.ResourceList) error {
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", node.Name, err)
	}
	capacity = capacity.DeepCopy()
	if _, ok := capacity[v1.ResourcePods]; !ok {
		capacity[v1.ResourcePods] = resource.MustParse("110")
	}
	created.Status.Capacity, created.Status.Allocatable = capacity, capacity
	created.Status.Images = node.Status.Images
	created.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting the status of node %s: %w", node.Name, err)
	}
	return nil
}

// ListRecords reads every buffered record from a record stream.
func ListRecords(url string) (*stream.List, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var l stream.List
	return &l, json.NewDecoder(resp.Body).Decode(&l)
}

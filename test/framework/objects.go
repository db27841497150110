package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/schedscope/schedscope/pkg/record"
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

// ListRecords reads every buffered record from a record stream, each
// decoded whole (with its scores), listing again from the last record
// until an answer reaches the newest: each answer holds at most
// stream.MaxAnswerBytes of records.
func ListRecords(url string) (*stream.List, error) {
	c, err := stream.NewClient(url, nil)
	if err != nil {
		return nil, err
	}
	l := &stream.List{Items: []stream.Record{}}
	req := stream.Request{}
	for {
		h, err := listOnce(c, req, l)
		if err != nil {
			return l, err
		}
		if req.Since == nil {
			l.Oldest = h.Oldest
		}
		l.Epoch, l.Seq, l.Newest = h.Epoch, h.Seq, h.Newest
		if h.Items == 0 || h.Seq >= h.Newest {
			return l, nil
		}
		since := h.Seq
		req = stream.Request{Epoch: h.Epoch, Since: &since}
	}
}

// NewestRecord returns the epoch of a scheduler's record stream and the
// sequence of its newest record, from one list answer.
func NewestRecord(url string) (epoch string, seq uint64, err error) {
	c, err := stream.NewClient(url, nil)
	if err != nil {
		return "", 0, err
	}
	h, err := listOnce(c, stream.Request{}, &stream.List{})
	return h.Epoch, h.Newest, err
}

// listOnce appends the records of one list answer to l.
func listOnce(c *stream.Client, req stream.Request, l *stream.List) (stream.ListHeader, error) {
	body, err := c.Open(context.Background(), req)
	if err != nil {
		return stream.ListHeader{}, err
	}
	defer body.Close()
	return stream.DecodeList(body, func(_ string, r stream.Record) error {
		var a record.Attempt
		if err := json.Unmarshal(r.JSON, &a); err != nil {
			return fmt.Errorf("decoding record %d: %w", r.Seq, err)
		}
		r.Attempt, r.JSON = &a, nil
		l.Items = append(l.Items, r)
		return nil
	})
}

// PauseImage is the image of test pods.
const PauseImage = "registry.k8s.io/pause:3.10"

// CreatePods creates pods name(0) ... name(n-1) in namespace ns for the
// scheduler profile, a few requests at a time. The pods request nothing:
// a node's pod capacity is what limits them.
func CreatePods(ctx context.Context, client kubernetes.Interface, ns, profile string, n int, name func(int) string) error {
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: ns},
				Spec:       v1.PodSpec{SchedulerName: profile, Containers: []v1.Container{{Name: "pause", Image: PauseImage}}},
			}
			if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating pod %s/%s: %w", ns, pod.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// CountBound returns how many of the pods in namespace ns are bound to a
// node, and how many there are.
func CountBound(ctx context.Context, client kubernetes.Interface, ns string) (bound, total int, err error) {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			bound++
		}
	}
	return bound, len(list.Items), nil
}

// WaitForBound waits until want pods of namespace ns are bound. Errors
// listing the pods (the control plane may be recovering) are retried.
func WaitForBound(ctx context.Context, client kubernetes.Interface, ns string, want int, timeout time.Duration) error {
	bound := 0
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, _, err := CountBound(ctx, client, ns)
		if err != nil {
			return false, nil
		}
		bound = n
		return bound >= want, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d pods of namespace %s bound: %w", bound, want, ns, err)
	}
	return nil
}

// DeletePods deletes every pod of namespace ns at once and waits until they
// are gone.
func DeletePods(ctx context.Context, client kubernetes.Interface, ns string) error {
	if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	})
}

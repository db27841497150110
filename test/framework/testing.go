package framework

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// unsafeInPath matches what a test name may hold that a directory name
// should not.
var unsafeInPath = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// StartTestControlPlane starts etcd and kube-apiserver for one test, in a
// directory named after the test that is kept, with every log, when the
// test fails, and removed otherwise.
func StartTestControlPlane(t testing.TB) *ControlPlane {
	t.Helper()
	dir, err := os.MkdirTemp("", "schedscope-"+unsafeInPath.ReplaceAllString(t.Name(), "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := StartControlPlane(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cp.Stop()
		if t.Failed() {
			t.Logf("logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return cp
}

// CreateNodes creates n Ready nodes, node-0000 on, each labeled with its
// hostname and with 64 CPUs, 256 GiB and room for 110 pods, 32 at a time.
// client's rate limit paces them.
func CreateNodes(t testing.TB, client kubernetes.Interface, n int) {
	t.Helper()
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("256Gi")}
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			name := fmt.Sprintf("node-%04d", i)
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}}}
			return CreateNode(ctx, client, node, capacity)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

package namespaces

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
	"github.com/schedscope/schedscope/pkg/stream"
)

// TestForget: records of a namespace being deleted, of one gone while the
// sidecar was away, and of one deleted later are removed; those of a
// namespace that lives are kept.
func TestForget(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var records []stream.Record
	for i, ns := range []string{"live", "deleting", "gone", "deleted-later"} {
		a := recordtest.MakeAttempt(ns, "p", "uid-"+ns).Unschedulable("0/1 nodes are available").Obj()
		records = append(records, stream.Record{Seq: uint64(i + 1), Attempt: a})
	}
	if err := st.Append(ctx, v1alpha1.Cursor{Epoch: "e", Seq: 4}, records); err != nil {
		t.Fatal(err)
	}

	now := metav1.Now()
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "live"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deleting", DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deleted-later"}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	if err := Forget(ctx, factory.Core().V1().Namespaces(), client.CoreV1(), st); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown)
	waitForNamespaces(t, st, []string{"deleted-later", "live"})

	if err := client.CoreV1().Namespaces().Delete(ctx, "deleted-later", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForNamespaces(t, st, []string{"live"})
}

func waitForNamespaces(t *testing.T, st store.Reader, want []string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = st.Namespaces(ctx)
		return slices.Equal(got, want), err
	})
	if err != nil {
		t.Fatalf("stored namespaces (-want +got):\n%s", cmp.Diff(want, got))
	}
}

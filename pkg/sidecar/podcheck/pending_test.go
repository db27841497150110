package podcheck

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

func TestStillPending(t *testing.T) {
	pod := func(name, uid, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: node}}
	}
	client := fake.NewClientset(pod("waiting", "u1", ""), pod("bound", "u2", "n1"), pod("recreated", "u3-new", ""))
	factory := informers.NewSharedInformerFactory(client, 0)
	check := StillPending(factory.Core().V1().Pods())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	tests := []struct {
		name, pod, uid string
		want           bool
	}{
		{name: "still waiting", pod: "waiting", uid: "u1", want: true},
		{name: "bound since", pod: "bound", uid: "u2", want: false},
		{name: "deleted", pod: "gone", uid: "u9", want: false},
		{name: "deleted and recreated", pod: "recreated", uid: "u3", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := check(v1alpha1.PodStatus{Pod: v1alpha1.PodRef{Namespace: "ns", Name: tt.pod, UID: tt.uid}})
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

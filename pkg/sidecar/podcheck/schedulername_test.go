package podcheck

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func TestSchedulerName(t *testing.T) {
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shadowed"}, Spec: corev1.PodSpec{SchedulerName: "binpack"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	lookup := SchedulerName(factory.Core().V1().Pods())
	if name, ok := lookup("ns", "shadowed"); ok {
		t.Errorf("before the informer synced: %q, true; want not known", name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for _, tt := range []struct {
		pod, want string
		wantOK    bool
	}{
		{pod: "shadowed", want: "binpack", wantOK: true},
		{pod: "gone"},
	} {
		if name, ok := lookup("ns", tt.pod); name != tt.want || ok != tt.wantOK {
			t.Errorf("SchedulerName(ns/%s) = %q, %v; want %q, %v", tt.pod, name, ok, tt.want, tt.wantOK)
		}
	}
}

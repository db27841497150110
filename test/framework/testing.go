package framework

import (
	"context"
	"os"
	"testing"
)

// StartTestControlPlane starts etcd and kube-apiserver for one test, in a
// directory named after prefix that is kept, with every log, when the test
// fails, and removed otherwise.
func StartTestControlPlane(t testing.TB, prefix string) *ControlPlane {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
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

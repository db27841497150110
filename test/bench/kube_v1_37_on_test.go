//go:build !kube1.35 && !kube1.36

package bench

import "k8s.io/kubernetes/test/utils/client-go/ktesting"

// tContext is the test context of scheduler_perf's hooks, which moved to
// test/utils/client-go/ktesting in Kubernetes v1.37.
type tContext = ktesting.TContext

//go:build kube1.35

package bench

import "k8s.io/kubernetes/test/utils/ktesting"

// tContext is the test context of scheduler_perf's hooks in Kubernetes v1.35.
type tContext = ktesting.TContext

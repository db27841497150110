//go:build !kube1.35

package plugins

import fwk "k8s.io/kube-scheduler/framework"

// maxScore is the highest score a Score plugin gives.
const maxScore = fwk.MaxScore

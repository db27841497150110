//go:build kube1.35

package plugins

import fwk "k8s.io/kube-scheduler/framework"

// maxScore is the highest score a Score plugin gives; v1.35 names it MaxNodeScore.
const maxScore = fwk.MaxNodeScore

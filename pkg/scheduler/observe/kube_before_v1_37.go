//go:build kube1.35 || kube1.36

package observe

import fwk "k8s.io/kube-scheduler/framework"

// This file is the part of observe that holds before Kubernetes v1.37: the
// framework keeps only each node's normalized, weighted scores, so the
// NormalizeScore wrapper keeps the raw scores it is given.

// normalizerKeepsRawScores tells whether the NormalizeScore wrapper keeps
// the raw scores it is given.
const normalizerKeepsRawScores = true

// nodeRawScores is nil: before v1.37 the framework does not keep raw
// scores, and the record's come from the NormalizeScore wrapper.
func nodeRawScores(*fwk.NodePluginScores) []fwk.PluginScore { return nil }

//go:build kube1.35 || kube1.36

package build

import fwk "k8s.io/kube-scheduler/framework"

// This file is the part of build that holds before Kubernetes v1.37: the
// framework keeps only each node's normalized, weighted scores, so a
// record's raw scores are those the NormalizeScore wrapper kept
// (Attempt.KeptRawScores).

// FrameworkKeepsRawScores tells whether the framework keeps each node's
// raw scores, before normalization.
const FrameworkKeepsRawScores = false

// nodeRawScores is nil: before v1.37 the framework does not keep raw
// scores.
func nodeRawScores(*fwk.NodePluginScores) []fwk.PluginScore { return nil }

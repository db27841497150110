//go:build !kube1.35 && !kube1.36

package observe

import fwk "k8s.io/kube-scheduler/framework"

// This file is the part of observe that holds from Kubernetes v1.37 on:
// the framework keeps each node's raw scores, before normalization.

// normalizerKeepsRawScores tells whether the NormalizeScore wrapper keeps
// the raw scores it is given: not needed from v1.37 on.
const normalizerKeepsRawScores = false

// nodeRawScores are the scores ns's node got from each Score plugin before
// normalization, as the framework keeps them.
func nodeRawScores(ns *fwk.NodePluginScores) []fwk.PluginScore { return ns.RawScores }

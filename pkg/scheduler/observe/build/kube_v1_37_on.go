//go:build !kube1.35 && !kube1.36

package build

import fwk "k8s.io/kube-scheduler/framework"

// This file is the part of build that holds from Kubernetes v1.37 on: the
// framework keeps each node's raw scores, before normalization.

// FrameworkKeepsRawScores tells whether the framework keeps each node's
// raw scores, before normalization.
const FrameworkKeepsRawScores = true

// nodeRawScores are the scores ns's node got from each Score plugin before
// normalization, as the framework keeps them.
func nodeRawScores(ns *fwk.NodePluginScores) []fwk.PluginScore { return ns.RawScores }

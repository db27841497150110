// Package observe makes the scheduling framework record what it decides.
//
// At start-up every plugin of every profile is replaced by an observing
// wrapper that exposes exactly the extension points of the plugin it wraps,
// times it and passes its results through unchanged. Each profile's framework
// is wrapped too, so the per-node Filter verdicts and per-plugin scores the
// scheduler computes are captured where it computes them. Together they
// produce one decision record per scheduling attempt.
package observe

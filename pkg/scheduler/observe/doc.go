// Package observe makes the scheduling framework record what it decides.
//
// Recorder.Install takes a scheduler built by scheduler.New, with any
// plugins, in-tree or out-of-tree, of any shape. In each profile's framework,
// after the framework has built its plugins and decided which extension
// points each one serves, every plugin of the recorded extension points is
// put inside an observing wrapper that times it and passes its results
// through unchanged. Each profile's framework is wrapped too, so the
// per-node Filter verdicts and per-plugin scores the scheduler computes are
// captured where it computes them. Together they collect what each
// scheduling attempt did, and package build turns that into the attempt's
// decision record on the Recorder's background worker. The event recorders
// of a scheduler built with Recorder.RecorderFactory tell which pods
// preemption evicted. Shadow profiles (Options.Shadows) are taken out of
// the scheduler's profiles and asked, within the scheduling cycle of each
// sampled attempt of their live profile, where they would have put the
// pod; the live attempt's record holds their answers (shadow.go).
package observe

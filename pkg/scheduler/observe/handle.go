package observe

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// preemptedReason is the event reason the scheduler gives each preemption victim.
const preemptedReason = "Preempted"

// RecorderFactory gives each profile's framework the event recorder that
// factory makes, inside a victimRecorder of r. Pass it to scheduler.New, so
// that the records name the pods preemption evicted: each profile's
// framework keeps the recorder the factory makes for it, and its plugins,
// preemption among them, reach that recorder through their handle.
func (r *Recorder) RecorderFactory(factory profile.RecorderFactory) profile.RecorderFactory {
	return func(name string) eventRecorder {
		return victimRecorder{eventRecorder: factory(name), recorder: r}
	}
}

// victimRecorder is the event recorder of an observed framework. It
// records every event as the recorder it wraps does, and also tells the
// Recorder which pods preemption evicted: the scheduler evicts victims
// asynchronously and reports each one with a Preempted event naming the
// preemptor.
type victimRecorder struct {
	eventRecorder
	recorder *Recorder
}

// recordsVictimsFor tells whether f's event recorder is a victimRecorder
// of r, made by r.RecorderFactory.
func (r *Recorder) recordsVictimsFor(f framework.Framework) bool {
	v, ok := f.EventRecorder().(victimRecorder)
	return ok && v.recorder == r
}

func (v victimRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	v.eventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	if reason != preemptedReason {
		return
	}
	// The preemptor is a pod or a pod group; only pods have records.
	victim, ok := regarding.(*v1.Pod)
	preemptor, err := meta.Accessor(related)
	if ok && err == nil {
		v.recorder.noteVictim(preemptor.GetUID(), victim)
	}
}

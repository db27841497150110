package observe

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/observe/nodeset"
)

// TestRecorderFactoryNotesVictims checks that the recorder the factory
// makes passes every event to the one it wraps, and that a Preempted event
// adds its pod to the victims of the preemptor's attempt in flight.
func TestRecorderFactoryNotesVictims(t *testing.T) {
	r := NewRecorder(Options{Sink: discard{}})
	wrapped := events.NewFakeRecorder(10)
	var profile string
	recorder := r.RecorderFactory(func(name string) eventRecorder {
		profile = name
		return wrapped
	})("p")
	if profile != "p" {
		t.Errorf("the wrapped factory was asked for profile %q, want p", profile)
	}
	preemptor := st.MakePod().Namespace("ns").Name("high").UID("high").Obj()
	victim := st.MakePod().Namespace("ns").Name("low").UID("low").Obj()
	a := newAttempt(r.profileTable("p"), preemptor, 1, time.Now(), time.Now(), nodeset.Empty)
	r.inflight.Store(preemptor.UID, a)

	recorder.Eventf(preemptor, nil, v1.EventTypeNormal, "Scheduled", "Binding", "assigned")
	recorder.Eventf(victim, preemptor, v1.EventTypeNormal, preemptedReason, "Preempting", "preempted")

	if got := len(wrapped.Events); got != 2 {
		t.Errorf("the wrapped recorder got %d events, want 2", got)
	}
	want := []record.PodRef{{Namespace: "ns", Name: "low", UID: "low"}}
	if diff := cmp.Diff(want, a.victims); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
}

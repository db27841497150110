//go:build !kube1.35

package app

import (
	"k8s.io/client-go/tools/events"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// recorderFactory gives each profile an event recorder of cc's
// broadcaster, as kube-scheduler does.
func recorderFactory(cc *schedulerserverconfig.CompletedConfig) profile.RecorderFactory {
	return func(name string) events.EventRecorderLogger {
		return cc.EventBroadcaster.NewRecorder(name)
	}
}

package app

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	kubeschedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/schedscope/schedscope/pkg/scheduler/metrics"
	"github.com/schedscope/schedscope/pkg/scheduler/observe"
)

// shadowFlag is the repeatable --shadow-profile=<shadow>=<live>.
type shadowFlag struct{ shadows *[]observe.Shadow }

func (f shadowFlag) String() string {
	if f.shadows == nil {
		return ""
	}
	pairs := make([]string, len(*f.shadows))
	for i, s := range *f.shadows {
		pairs[i] = s.Name + "=" + s.Live
	}
	return strings.Join(pairs, ",")
}

func (f shadowFlag) Set(value string) error {
	name, live, ok := strings.Cut(value, "=")
	if !ok || name == "" || live == "" {
		return fmt.Errorf("%q is not <shadow schedulerName>=<live schedulerName>", value)
	}
	*f.shadows = append(*f.shadows, observe.Shadow{Name: name, Live: live})
	return nil
}

func (shadowFlag) Type() string { return "shadow=live" }

// validateShadows checks the shadow profiles against the configuration's
// profiles; each error names the flag and the shadow profile.
func (o *RecordOptions) validateShadows(profiles []kubeschedulerconfig.KubeSchedulerProfile) []error {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.SchedulerName
	}
	var errs []error
	for _, err := range observe.CheckShadows(o.Shadows, names) {
		errs = append(errs, fmt.Errorf("--shadow-profile: %w", err))
	}
	return errs
}

// countShadowPods counts in counter, by shadow, the pods not yet on a node
// that name a shadow profile: the scheduler leaves them pending, as a
// shadow schedules no pod.
func countShadowPods(factory informers.SharedInformerFactory, shadows []observe.Shadow, counter *metrics.Metrics) error {
	if len(shadows) == 0 {
		return nil
	}
	isShadow := map[string]bool{}
	for _, s := range shadows {
		isShadow[s.Name] = true
	}
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			pod, ok := obj.(*v1.Pod)
			return ok && pod.Spec.NodeName == "" && isShadow[pod.Spec.SchedulerName]
		},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			pod := obj.(*v1.Pod)
			counter.ShadowPods.WithLabelValues(pod.Spec.SchedulerName).Inc()
			klog.Background().V(2).Info("Pod names a shadow profile, which schedules no pod", "pod", klog.KObj(pod), "shadow", pod.Spec.SchedulerName)
		}},
	})
	return err
}

package clustermetrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// CountedEventReasons are the event reasons counted in
// schedscope_cluster_scheduling_events_total; others are ignored so that
// the reason label stays a closed set.
var CountedEventReasons = map[string]bool{
	"FailedScheduling":     true,
	"Preempted":            true,
	"Evicted":              true,
	"TaintManagerEviction": true,
}

// AgeBuckets are the pending pod age buckets, as label values, with their
// upper bounds.
var AgeBuckets = []struct {
	Label string
	Below time.Duration
}{
	{"0-1m", time.Minute},
	{"1m-5m", 5 * time.Minute},
	{"5m-30m", 30 * time.Minute},
	{"30m-2h", 2 * time.Hour},
	{"2h+", 1<<63 - 1},
}

// Cluster derives scheduling health from pods and events, and is the
// collector of its series. Pending pods are counted from the pod informer's
// cache on each scrape; the time to schedule and the event counters are
// driven by informer events.
type Cluster struct {
	pods  corelisters.PodLister
	clock clock.PassiveClock

	pendingDesc        *prometheus.Desc
	schedulingDuration *prometheus.HistogramVec
	schedulingEvents   *prometheus.CounterVec
}

var _ prometheus.Collector = &Cluster{}

// NewCluster sets up informers from factory and registers the cluster's
// series with reg.
func NewCluster(factory informers.SharedInformerFactory, reg prometheus.Registerer, clk clock.PassiveClock) (*Cluster, error) {
	c := &Cluster{
		pods:  factory.Core().V1().Pods().Lister(),
		clock: clk,
		pendingDesc: prometheus.NewDesc("schedscope_cluster_pending_pods",
			"Pods not yet bound to a node, by scheduler profile (spec.schedulerName) and age bucket.", []string{"profile", "age"}, nil),
		schedulingDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "schedscope_pod_scheduling_duration_seconds",
			Help: "Time from pod creation to the pod being scheduled, by scheduler profile.",
			// 10ms to about 2.9h: from an idle cluster to pods pending for hours.
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 11),
		}, []string{"profile"}),
		schedulingEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedscope_cluster_scheduling_events_total",
			Help: "FailedScheduling, Preempted and eviction events, by reason.",
		}, []string{"reason"}),
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: c.podUpdated,
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	if _, err := factory.Core().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if !isInInitialList {
				c.eventSeen(nil, obj)
			}
		},
		UpdateFunc: c.eventSeen,
	}); err != nil {
		return nil, fmt.Errorf("watching events: %w", err)
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("registering cluster metrics: %w", err)
	}
	return c, nil
}

// podUpdated observes the time to schedule when a pod gets its node.
func (c *Cluster) podUpdated(oldObj, newObj any) {
	oldPod, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.Spec.NodeName != "" || pod.Spec.NodeName == "" {
		return
	}
	scheduledAt := c.clock.Now()
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue && !cond.LastTransitionTime.IsZero() {
			scheduledAt = cond.LastTransitionTime.Time
		}
	}
	d := scheduledAt.Sub(pod.CreationTimestamp.Time)
	if d < 0 {
		d = 0
	}
	c.schedulingDuration.WithLabelValues(pod.Spec.SchedulerName).Observe(d.Seconds())
}

func eventCount(e *corev1.Event) int32 {
	switch {
	case e.Series != nil && e.Series.Count > 0:
		return e.Series.Count
	case e.Count > 0:
		return e.Count
	default:
		return 1
	}
}

// eventSeen counts new occurrences of the counted event reasons.
func (c *Cluster) eventSeen(oldObj, newObj any) {
	e, ok := newObj.(*corev1.Event)
	if !ok || !CountedEventReasons[e.Reason] {
		return
	}
	n := eventCount(e)
	if old, ok := oldObj.(*corev1.Event); ok {
		n -= eventCount(old)
	}
	if n > 0 {
		c.schedulingEvents.WithLabelValues(e.Reason).Add(float64(n))
	}
}

// Describe implements prometheus.Collector.
func (c *Cluster) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pendingDesc
	c.schedulingDuration.Describe(ch)
	c.schedulingEvents.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Cluster) Collect(ch chan<- prometheus.Metric) {
	c.schedulingDuration.Collect(ch)
	c.schedulingEvents.Collect(ch)
	pods, _ := c.pods.List(labels.Everything())
	for profile, counts := range pendingByProfile(pods, c.clock.Now()) {
		for i, b := range AgeBuckets {
			ch <- prometheus.MustNewConstMetric(c.pendingDesc, prometheus.GaugeValue, counts[i], profile, b.Label)
		}
	}
}

// pendingByProfile counts the pods that wait for a node (not bound, not
// terminated, not being deleted) by spec.schedulerName, each count a slice
// indexed like AgeBuckets. A profile with no pending pod has no entry.
func pendingByProfile(pods []*corev1.Pod, now time.Time) map[string][]float64 {
	pending := map[string][]float64{}
	for _, p := range pods {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		counts := pending[p.Spec.SchedulerName]
		if counts == nil {
			counts = make([]float64, len(AgeBuckets))
			pending[p.Spec.SchedulerName] = counts
		}
		age := now.Sub(p.CreationTimestamp.Time)
		for i, b := range AgeBuckets {
			if age < b.Below {
				counts[i]++
				break
			}
		}
	}
	return pending
}

package health

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/schedscope/schedscope/pkg/sidecar/metrics"
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

// Cluster derives scheduling health from pods, nodes and events. Its state
// (pending pods, node counts, resources) is computed from the informers'
// caches on each scrape; its counters are driven by informer events.
type Cluster struct {
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	clock   clock.PassiveClock
	metrics *metrics.Metrics

	pendingDesc, cordonedDesc, taintedDesc     *prometheus.Desc
	cpuRequestedDesc, cpuAllocatableDesc       *prometheus.Desc
	memoryRequestedDesc, memoryAllocatableDesc *prometheus.Desc
}

var _ prometheus.Collector = &Cluster{}

// NewCluster sets up informers from factory, registers the cluster state
// metrics with reg and counts events into m.
func NewCluster(factory informers.SharedInformerFactory, m *metrics.Metrics, reg prometheus.Registerer, clk clock.PassiveClock) (*Cluster, error) {
	c := &Cluster{
		pods:    factory.Core().V1().Pods().Lister(),
		nodes:   factory.Core().V1().Nodes().Lister(),
		clock:   clk,
		metrics: m,
		pendingDesc: prometheus.NewDesc("schedscope_cluster_pending_pods",
			"Pods not yet bound to a node, by scheduler profile (spec.schedulerName) and age bucket.", []string{"profile", "age"}, nil),
		cordonedDesc: prometheus.NewDesc("schedscope_cluster_nodes_cordoned",
			"Nodes marked unschedulable (cordoned).", nil, nil),
		taintedDesc: prometheus.NewDesc("schedscope_cluster_nodes_tainted",
			"Nodes with at least one taint of the effect.", []string{"effect"}, nil),
		cpuRequestedDesc: prometheus.NewDesc("schedscope_cluster_cpu_requested_cores",
			"CPU requested by the non-terminated pods bound to nodes.", nil, nil),
		cpuAllocatableDesc: prometheus.NewDesc("schedscope_cluster_cpu_allocatable_cores",
			"CPU allocatable, summed over nodes.", nil, nil),
		memoryRequestedDesc: prometheus.NewDesc("schedscope_cluster_memory_requested_bytes",
			"Memory requested by the non-terminated pods bound to nodes.", nil, nil),
		memoryAllocatableDesc: prometheus.NewDesc("schedscope_cluster_memory_allocatable_bytes",
			"Memory allocatable, summed over nodes.", nil, nil),
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
	c.metrics.PodSchedulingDuration.WithLabelValues(pod.Spec.SchedulerName).Observe(d.Seconds())
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
		c.metrics.SchedulingEvents.WithLabelValues(e.Reason).Add(float64(n))
	}
}

// Describe implements prometheus.Collector.
func (c *Cluster) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pendingDesc, c.cordonedDesc, c.taintedDesc, c.cpuRequestedDesc,
		c.cpuAllocatableDesc, c.memoryRequestedDesc, c.memoryAllocatableDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Cluster) Collect(ch chan<- prometheus.Metric) {
	now := c.clock.Now()
	pods, _ := c.pods.List(labels.Everything())
	nodes, _ := c.nodes.List(labels.Everything())

	pending := map[string][]float64{}
	var cpuReq, memReq resource.Quantity
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp != nil {
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
			continue
		}
		req := podRequests(p)
		cpuReq.Add(req[corev1.ResourceCPU])
		memReq.Add(req[corev1.ResourceMemory])
	}
	for profile, counts := range pending {
		for i, b := range AgeBuckets {
			ch <- prometheus.MustNewConstMetric(c.pendingDesc, prometheus.GaugeValue, counts[i], profile, b.Label)
		}
	}

	var cordoned float64
	tainted := map[corev1.TaintEffect]float64{corev1.TaintEffectNoSchedule: 0, corev1.TaintEffectPreferNoSchedule: 0, corev1.TaintEffectNoExecute: 0}
	var cpuAlloc, memAlloc resource.Quantity
	for _, n := range nodes {
		if n.Spec.Unschedulable {
			cordoned++
		}
		seen := map[corev1.TaintEffect]bool{}
		for _, t := range n.Spec.Taints {
			if _, known := tainted[t.Effect]; known && !seen[t.Effect] {
				seen[t.Effect] = true
				tainted[t.Effect]++
			}
		}
		cpuAlloc.Add(n.Status.Allocatable[corev1.ResourceCPU])
		memAlloc.Add(n.Status.Allocatable[corev1.ResourceMemory])
	}
	ch <- prometheus.MustNewConstMetric(c.cordonedDesc, prometheus.GaugeValue, cordoned)
	for effect, v := range tainted {
		ch <- prometheus.MustNewConstMetric(c.taintedDesc, prometheus.GaugeValue, v, string(effect))
	}
	ch <- prometheus.MustNewConstMetric(c.cpuRequestedDesc, prometheus.GaugeValue, float64(cpuReq.MilliValue())/1000)
	ch <- prometheus.MustNewConstMetric(c.cpuAllocatableDesc, prometheus.GaugeValue, float64(cpuAlloc.MilliValue())/1000)
	ch <- prometheus.MustNewConstMetric(c.memoryRequestedDesc, prometheus.GaugeValue, float64(memReq.Value()))
	ch <- prometheus.MustNewConstMetric(c.memoryAllocatableDesc, prometheus.GaugeValue, float64(memAlloc.Value()))
}

// podRequests is what the scheduler accounts for a pod: the sum of its
// containers and restartable (sidecar) init containers, at least the largest
// regular init container plus the sidecars started before it, plus overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	add := func(dst corev1.ResourceList, src corev1.ResourceList) {
		for name, q := range src {
			v := dst[name]
			v.Add(q)
			dst[name] = v
		}
	}
	for _, c := range p.Spec.Containers {
		add(sum, c.Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(sum, c.Resources.Requests)
			add(sidecars, c.Resources.Requests)
			continue
		}
		need := corev1.ResourceList{}
		add(need, sidecars)
		add(need, c.Resources.Requests)
		for name, q := range need {
			if cur, ok := initMax[name]; !ok || q.Cmp(cur) > 0 {
				initMax[name] = q
			}
		}
	}
	for name, q := range initMax {
		if cur, ok := sum[name]; !ok || q.Cmp(cur) > 0 {
			sum[name] = q
		}
	}
	add(sum, p.Spec.Overhead)
	return sum
}

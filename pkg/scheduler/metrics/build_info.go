package metrics

import (
	"k8s.io/component-base/metrics"
	k8sversion "k8s.io/component-base/version"

	"github.com/schedscope/schedscope/pkg/version"
)

const buildInfoName = namespace + "_build_info"

// buildInfoCollector reports schedscope_build_info: 1, labelled with
// schedscope's version and the Kubernetes version the scheduler was built
// from. Unlike a vector it has nothing to reset, so it outlives
// DELETE /metrics.
type buildInfoCollector struct {
	metrics.BaseStableCollector
	desc                *metrics.Desc
	version, k8sVersion string
}

// newBuildInfoCollector returns the collector of the build with the given
// schedscope and Kubernetes versions.
func newBuildInfoCollector(version, k8sVersion string) *buildInfoCollector {
	return &buildInfoCollector{
		desc: metrics.NewDesc(buildInfoName,
			"A metric with a constant '1' value labeled by the schedscope version and the Kubernetes version (as kubernetes_build_info's git_version) the scheduler was built from.",
			[]string{"version", "k8s_version"}, nil, metrics.ALPHA, ""),
		version:    version,
		k8sVersion: k8sVersion,
	}
}

// newRunningBuildInfoCollector returns the collector of the running binary.
func newRunningBuildInfoCollector() *buildInfoCollector {
	return newBuildInfoCollector(version.Version, k8sversion.Get().GitVersion)
}

func (c *buildInfoCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- c.desc
}

func (c *buildInfoCollector) CollectWithStability(ch chan<- metrics.Metric) {
	ch <- metrics.NewLazyConstMetric(c.desc, metrics.GaugeValue, 1, c.version, c.k8sVersion)
}

package metrics

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	k8sversion "k8s.io/component-base/version"

	"github.com/schedscope/schedscope/pkg/version"
)

const buildInfoHeader = `
# HELP schedscope_build_info [ALPHA] A metric with a constant '1' value labeled by the schedscope version and the Kubernetes version (as kubernetes_build_info's git_version) the scheduler was built from.
# TYPE schedscope_build_info gauge
`

func TestBuildInfo(t *testing.T) {
	tests := []struct {
		name                string
		version, k8sVersion string
		want                string
	}{
		{
			name:    "release",
			version: "v0.2.0", k8sVersion: "v1.37.2",
			want: `schedscope_build_info{k8s_version="v1.37.2",version="v0.2.0"} 1`,
		},
		{
			name:    "unset at link time",
			version: "devel", k8sVersion: "v0.0.0-master+$Format:%H$",
			want: `schedscope_build_info{k8s_version="v0.0.0-master+$Format:%H$",version="devel"} 1`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registry := metrics.NewKubeRegistry()
			registry.CustomMustRegister(newBuildInfoCollector(tt.version, tt.k8sVersion))
			if err := testutil.GatherAndCompare(registry, strings.NewReader(buildInfoHeader+tt.want+"\n"), buildInfoName); err != nil {
				t.Error(err)
			}
			// As the registry is reset with DELETE /metrics.
			registry.Reset()
			if err := testutil.GatherAndCompare(registry, strings.NewReader(buildInfoHeader+tt.want+"\n"), buildInfoName); err != nil {
				t.Errorf("after Reset: %v", err)
			}
		})
	}
}

// TestBuildInfoOfRunningBinary checks that the registered metrics report
// the versions the binary was linked with.
func TestBuildInfoOfRunningBinary(t *testing.T) {
	registry := metrics.NewKubeRegistry()
	New().RegisterTo(registry, Sources{})
	want := buildInfoHeader + fmt.Sprintf("schedscope_build_info{k8s_version=%q,version=%q} 1\n", k8sversion.Get().GitVersion, version.Version)
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), buildInfoName); err != nil {
		t.Error(err)
	}
}

package scheduler

import (
	"strings"
	"testing"
)

// TestInvalidConfiguration starts kube-scheduler and schedscope-scheduler
// with the same invalid input: both must refuse to start, and schedscope's
// message must name the problem as precisely as upstream's, or more.
func TestInvalidConfiguration(t *testing.T) {
	const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\n"
	tests := []struct {
		name   string
		config string
		flags  []string
		// want must appear in schedscope-scheduler's output.
		want []string
		// upstream is false for schedscope's own flags.
		upstream bool
	}{
		{
			name:     "unknown plugin",
			config:   header + "profiles:\n- schedulerName: bad\n  plugins:\n    filter:\n      enabled:\n      - name: NoSuchPlugin\n",
			want:     []string{"profiles[0].plugins.filter.enabled[0].name", `"NoSuchPlugin" does not exist`},
			upstream: true,
		},
		{
			name:     "plugin that lacks the extension point",
			config:   header + "profiles:\n- schedulerName: bad\n  plugins:\n    score:\n      enabled:\n      - name: NodeName\n",
			want:     []string{`plugin "NodeName" does not extend ScorePlugin plugin`},
			upstream: true,
		},
		{
			name: "bad plugin args",
			config: header + "profiles:\n- schedulerName: bad\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n" +
				"      scoringStrategy:\n        type: Bogus\n",
			want:     []string{`initializing plugin "NodeResourcesFit": scoringStrategy.type: Unsupported value: "Bogus"`},
			upstream: true,
		},
		{
			name: "resource weight out of range",
			config: header + "profiles:\n- schedulerName: bad\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n" +
				"      scoringStrategy:\n        type: LeastAllocated\n        resources:\n        - name: cpu\n          weight: 101\n",
			want:     []string{"scoringStrategy.resources[0].weight: Invalid value: 101", "not in valid range (0, 100]"},
			upstream: true,
		},
		{
			name:     "hard pod affinity weight out of range",
			config:   header + "profiles:\n- schedulerName: bad\n  pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 101\n",
			want:     []string{"hardPodAffinityWeight", "not in valid range [0, 100]"},
			upstream: true,
		},
		{
			name:   "negative score weight",
			config: header + "profiles:\n- schedulerName: bad\n  plugins:\n    score:\n      enabled:\n      - name: NodeAffinity\n        weight: -5\n",
			want:   []string{"profiles[0].plugins.score.enabled[0].weight: -5 must not be negative"},
		},
		{
			name:   "record buffer size",
			config: header,
			flags:  []string{"--record-buffer-size=0"},
			want:   []string{"--record-buffer-size: must be at least 1"},
		},
		{
			name:   "record buffer bytes",
			config: header,
			flags:  []string{"--record-buffer-bytes=-1"},
			want:   []string{"--record-buffer-bytes: must be at least 1"},
		},
		{
			name:   "remote record stream",
			config: header,
			flags:  []string{"--record-stream-address=0.0.0.0:10262"},
			want:   []string{"--record-stream-address", "not a loopback address", "--record-stream-allow-remote"},
		},
		{
			name:   "remote record stream on every interface",
			config: header,
			flags:  []string{"--record-stream-address=[::]:10262"},
			want:   []string{"--record-stream-address", "not a loopback address", "--record-stream-allow-remote"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			binaries := []string{"schedscope-scheduler"}
			if tt.upstream {
				binaries = append(binaries, "kube-scheduler")
			}
			for _, binary := range binaries {
				_, err := controlPlane.StartScheduler(t.Context(), "invalid-"+binary, binary, tt.config, tt.flags...)
				if err == nil {
					t.Fatalf("%s started with invalid input", binary)
				}
				if binary != "schedscope-scheduler" {
					continue
				}
				// The message is in the log, quoted.
				msg := strings.ReplaceAll(err.Error(), `\"`, `"`)
				for _, w := range tt.want {
					if !strings.Contains(msg, w) {
						t.Errorf("%s error does not contain %q:\n%v", binary, w, err)
					}
				}
				if strings.Contains(err.Error(), "schedscope:") {
					t.Errorf("error names a wrapper instead of the plugin:\n%v", err)
				}
			}
		})
	}
}

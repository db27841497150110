package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/schedscope/schedscope/cmd/schedscope-sidecar/app"
	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
)

// loadSchedulerConfig reads a KubeSchedulerConfiguration as kube-scheduler
// does (strict decoding, defaulting), validates it as kube-scheduler does,
// and checks what schedscope checks on top: every enabled plugin exists and
// no score weight is negative. Then it builds each profile's framework, which
// constructs every plugin with its args.
func loadSchedulerConfig(path string) (*schedconfig.KubeSchedulerConfiguration, error) {
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, err
	}
	registry := plugins.NewInTreeRegistry()
	for i, p := range cfg.Profiles {
		for point, set := range pluginSets(p.Plugins) {
			for j, pl := range set.Enabled {
				if _, ok := registry[pl.Name]; !ok {
					return nil, fmt.Errorf("profiles[%d].plugins.%s.enabled[%d].name: plugin %q does not exist", i, point, j, pl.Name)
				}
				if pl.Weight < 0 {
					return nil, fmt.Errorf("profiles[%d].plugins.%s.enabled[%d].weight: %d must not be negative", i, point, j, pl.Weight)
				}
			}
		}
	}
	schedmetrics.Register() // the framework instruments plugins with them
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range cfg.Profiles {
		fw, err := frameworkruntime.NewFramework(ctx, registry, &cfg.Profiles[i],
			frameworkruntime.WithClientSet(client),
			frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
			frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot()))
		if err != nil {
			return nil, err
		}
		_ = fw.Close()
	}
	return cfg, nil
}

func pluginSets(p *schedconfig.Plugins) map[string]schedconfig.PluginSet {
	if p == nil {
		return nil
	}
	return map[string]schedconfig.PluginSet{
		"preEnqueue": p.PreEnqueue, "queueSort": p.QueueSort, "preFilter": p.PreFilter, "filter": p.Filter,
		"postFilter": p.PostFilter, "preScore": p.PreScore, "score": p.Score, "reserve": p.Reserve,
		"permit": p.Permit, "preBind": p.PreBind, "bind": p.Bind, "postBind": p.PostBind, "multiPoint": p.MultiPoint,
	}
}

// scoreWeights returns the enabled score plugins of a defaulted profile with their weights.
func scoreWeights(p schedconfig.KubeSchedulerProfile) map[string]int32 {
	w := map[string]int32{}
	for _, pl := range p.Plugins.MultiPoint.Enabled {
		w[pl.Name] = pl.Weight
	}
	for _, pl := range p.Plugins.Score.Enabled {
		w[pl.Name] = pl.Weight
	}
	for _, pl := range p.Plugins.Score.Disabled {
		delete(w, pl.Name)
	}
	return w
}

func fitStrategy(t *testing.T, p schedconfig.KubeSchedulerProfile) *schedconfig.ScoringStrategy {
	t.Helper()
	for _, pc := range p.PluginConfig {
		if pc.Name == "NodeResourcesFit" {
			args, ok := pc.Args.(*schedconfig.NodeResourcesFitArgs)
			if !ok {
				t.Fatalf("NodeResourcesFit args are %T", pc.Args)
			}
			return args.ScoringStrategy
		}
	}
	t.Fatalf("profile %s has no NodeResourcesFit args", p.SchedulerName)
	return nil
}

func TestSchedulerConfigs(t *testing.T) {
	tests := []struct {
		file     string
		profiles []string
		// binpack names the profiles that must score with MostAllocated.
		binpack []string
	}{
		{file: "scheduler-default.yaml", profiles: []string{"schedscope"}},
		{file: "scheduler-binpack.yaml", profiles: []string{"schedscope-binpack"}, binpack: []string{"schedscope-binpack"}},
		{file: "scheduler-two-profiles.yaml", profiles: []string{"schedscope", "schedscope-binpack"}, binpack: []string{"schedscope-binpack"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			cfg, err := loadSchedulerConfig(tt.file)
			if err != nil {
				t.Fatalf("%s: %v", tt.file, err)
			}
			var names []string
			for _, p := range cfg.Profiles {
				names = append(names, p.SchedulerName)
				strategy := fitStrategy(t, p)
				want := schedconfig.LeastAllocated
				if slices.Contains(tt.binpack, p.SchedulerName) {
					want = schedconfig.MostAllocated
					w := scoreWeights(p)
					if w["NodeResourcesFit"] != 5 || w["NodeAffinity"] != 1 {
						t.Errorf("profile %s: NodeResourcesFit weight %d, NodeAffinity weight %d, want 5 and 1", p.SchedulerName, w["NodeResourcesFit"], w["NodeAffinity"])
					}
					for _, off := range []string{"NodeResourcesBalancedAllocation", "ImageLocality"} {
						if _, ok := w[off]; ok {
							t.Errorf("profile %s: score plugin %s should be disabled", p.SchedulerName, off)
						}
					}
				}
				if strategy.Type != want {
					t.Errorf("profile %s: NodeResourcesFit scoring %s, want %s", p.SchedulerName, strategy.Type, want)
				}
			}
			if diff := cmp.Diff(tt.profiles, names); diff != "" {
				t.Errorf("schedulerNames (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSchedulerConfigTypos proves the loader above is strict enough: each
// example with one typo must fail.
func TestSchedulerConfigTypos(t *testing.T) {
	data, err := os.ReadFile("scheduler-two-profiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, old, new, wantErr string }{
		{"unknown field", "scoringStrategy:", "scoringStrategi:", "unknown field"},
		{"unknown plugin", "- name: NodeAffinity", "- name: NodeAfinity", `plugin "NodeAfinity" does not exist`},
		{"negative weight", "weight: 5", "weight: -5", "must not be negative"},
		{"unknown strategy", "type: MostAllocated", "type: MostAlocated", "scoringStrategy.type"},
		{"duplicate profile", "- schedulerName: schedscope-binpack", "- schedulerName: schedscope", "schedulerName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(string(data), tt.old) {
				t.Fatalf("%q not in the example", tt.old)
			}
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(strings.Replace(string(data), tt.old, tt.new, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadSchedulerConfig(path)
			if err == nil {
				t.Fatalf("a config with %q instead of %q loaded", tt.new, tt.old)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestTracingConfig(t *testing.T) {
	cfg, err := tracing.LoadConfig("tracing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoint == nil || *cfg.Endpoint != "jaeger-collector.schedscope.svc:4317" {
		t.Errorf("endpoint %v, want the example collector jaeger-collector.schedscope.svc:4317", cfg.Endpoint)
	}
	if cfg.SamplingRatePerMillion == nil || *cfg.SamplingRatePerMillion != 10000 {
		t.Errorf("samplingRatePerMillion %v, want 10000", cfg.SamplingRatePerMillion)
	}
}

// readArgs returns the flags of an args file: one a line, without blank and
// comment lines.
func readArgs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			args = append(args, line)
		}
	}
	return args
}

func TestSidecarArgs(t *testing.T) {
	args := readArgs(t, "sidecar.args")
	o := app.NewOptions()
	fs := pflag.NewFlagSet("schedscope-sidecar", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("sidecar.args: %v", err)
	}
	// Validate checks that the database directory exists: point it at one.
	o.Store = "sqlite://" + filepath.Join(t.TempDir(), "records.db")
	if err := o.Validate(); err != nil {
		t.Errorf("sidecar.args: %v", err)
	}
	if fs.NArg() != 0 {
		t.Errorf("sidecar.args has arguments that are not flags: %q", fs.Args())
	}
}

package observe

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// fuzzPluginNames are the names a fuzzed profile draws from: in-tree
// plugins (so that Observe accepts some profiles), the wildcard, the empty
// name, a name that already carries the wrapper prefix, and unknown ones.
var fuzzPluginNames = []string{
	"*", "", "NodeResourcesFit", "NodeAffinity", "TaintToleration", "PrioritySort",
	"DefaultBinder", "DefaultPreemption", "ImageLocality", "VolumeBinding",
	"schedscope:NodeAffinity", "schedscope:", "Unknown", "node affinity",
}

// fuzzBytes hands out the fuzzer's bytes one at a time, zero when used up.
type fuzzBytes []byte

func (b *fuzzBytes) next() byte {
	if len(*b) == 0 {
		return 0
	}
	c := (*b)[0]
	*b = (*b)[1:]
	return c
}

// name is one of fuzzPluginNames, or a string of up to 15 raw bytes.
func (b *fuzzBytes) name() string {
	c := b.next()
	if int(c) < 2*len(fuzzPluginNames) {
		return fuzzPluginNames[int(c)%len(fuzzPluginNames)]
	}
	n := int(c % 16)
	s := make([]byte, 0, n)
	for range n {
		s = append(s, b.next())
	}
	return string(s)
}

func (b *fuzzBytes) plugins() []config.Plugin {
	n := int(b.next() % 5)
	if n == 0 {
		return nil
	}
	ps := make([]config.Plugin, n)
	for i := range ps {
		ps[i] = config.Plugin{Name: b.name(), Weight: int32(int8(b.next()))}
	}
	return ps
}

// profiles builds up to 3 profiles; each extension point of each profile
// gets an enabled and a disabled set when a bit of the next byte says so.
func (b *fuzzBytes) profiles() []config.KubeSchedulerProfile {
	profiles := make([]config.KubeSchedulerProfile, int(b.next()%4))
	for i := range profiles {
		p := &profiles[i]
		p.SchedulerName = fmt.Sprintf("profile-%d", i)
		if flags := b.next(); flags&1 != 0 {
			p.Plugins = &config.Plugins{}
			for _, set := range pluginSets(p.Plugins) {
				if b.next()&1 != 0 {
					set.Enabled = b.plugins()
					set.Disabled = b.plugins()
				}
			}
		}
		for range int(b.next() % 3) {
			p.PluginConfig = append(p.PluginConfig, config.PluginConfig{Name: b.name(), Args: &runtime.Unknown{Raw: []byte{b.next()}}})
		}
	}
	return profiles
}

func deepCopyProfiles(in []config.KubeSchedulerProfile) []config.KubeSchedulerProfile {
	out := make([]config.KubeSchedulerProfile, len(in))
	for i := range in {
		out[i] = *in[i].DeepCopy()
	}
	return out
}

// unwrapProfiles is WrapProfiles undone: every name back to PluginName.
func unwrapProfiles(profiles []config.KubeSchedulerProfile) {
	for i := range profiles {
		p := &profiles[i]
		if p.Plugins != nil {
			for _, set := range pluginSets(p.Plugins) {
				for _, ps := range [][]config.Plugin{set.Enabled, set.Disabled} {
					for j := range ps {
						ps[j].Name = PluginName(ps[j].Name)
					}
				}
			}
		}
		for j := range p.PluginConfig {
			p.PluginConfig[j].Name = PluginName(p.PluginConfig[j].Name)
		}
	}
}

// FuzzWrapProfiles checks, on random profiles, what WrapProfiles and Observe
// promise: every plugin name except "*" and every pluginConfig name becomes
// its wrapper's name; weights, order, args and everything else are kept, so
// unwrapping gives the profiles back; Observe does not change its input, and
// when it accepts profiles, each enabled wrapper it names is in its registry.
func FuzzWrapProfiles(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 1, 1, 2, 2, 3, 4, 5, 0, 1})
	f.Add([]byte{3, 1, 0xff, 4, 2, 10, 3, 5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4, 1, 8, 1, 0, 2, 1, 7, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBytes(data)
		orig := b.profiles()

		got := deepCopyProfiles(orig)
		WrapProfiles(got)
		if len(got) != len(orig) {
			t.Fatalf("WrapProfiles changed the number of profiles from %d to %d", len(orig), len(got))
		}
		for i := range orig {
			if (orig[i].Plugins == nil) != (got[i].Plugins == nil) {
				t.Fatalf("profiles[%d].plugins: nil changed", i)
			}
			if orig[i].Plugins != nil {
				gotSets := pluginSets(got[i].Plugins)
				for k, set := range pluginSets(orig[i].Plugins) {
					checkWrapped(t, fmt.Sprintf("profiles[%d].plugins.%s.enabled", i, set.name), set.Enabled, gotSets[k].Enabled)
					checkWrapped(t, fmt.Sprintf("profiles[%d].plugins.%s.disabled", i, set.name), set.Disabled, gotSets[k].Disabled)
				}
			}
			for j, pc := range orig[i].PluginConfig {
				if want := WrappedName(pc.Name); got[i].PluginConfig[j].Name != want {
					t.Errorf("profiles[%d].pluginConfig[%d].name = %q, want %q", i, j, got[i].PluginConfig[j].Name, want)
				}
			}
		}
		unwrapped := deepCopyProfiles(got)
		unwrapProfiles(unwrapped)
		if diff := cmp.Diff(orig, unwrapped); diff != "" {
			t.Fatalf("unwrap(wrap(profiles)) differs (-orig +unwrapped):\n%s", diff)
		}

		in := deepCopyProfiles(orig)
		registry, observed, err := NewRecorder(Options{Sink: discard{}}).Observe(nil, in)
		if diff := cmp.Diff(orig, in); diff != "" {
			t.Fatalf("Observe changed its input (-before +after):\n%s", diff)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(got, observed); diff != "" {
			t.Fatalf("Observe's profiles differ from WrapProfiles' (-WrapProfiles +Observe):\n%s", diff)
		}
		for i, p := range observed {
			if p.Plugins == nil {
				continue
			}
			for _, set := range pluginSets(p.Plugins) {
				for _, plugin := range set.Enabled {
					if _, ok := registry[plugin.Name]; !ok && plugin.Name != "*" {
						t.Errorf("profiles[%d].plugins.%s enables %q, which Observe's registry lacks", i, set.name, plugin.Name)
					}
				}
			}
		}
	})
}

func checkWrapped(t *testing.T, field string, orig, got []config.Plugin) {
	t.Helper()
	if len(orig) != len(got) {
		t.Fatalf("%s: %d plugins became %d", field, len(orig), len(got))
	}
	for j, p := range orig {
		want := config.Plugin{Name: WrappedName(p.Name), Weight: p.Weight}
		if p.Name == "*" {
			want.Name = "*"
		}
		if got[j] != want {
			t.Errorf("%s[%d] = %+v, want %+v", field, j, got[j], want)
		}
		if PluginName(got[j].Name) != p.Name {
			t.Errorf("%s[%d]: PluginName(%q) = %q, want %q", field, j, got[j].Name, PluginName(got[j].Name), p.Name)
		}
	}
}

package app

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// checkProfiles reports the first enabled plugin that is in neither the
// in-tree registry nor outOfTree, naming its field, where kube-scheduler
// names only the plugin. It also rejects negative score weights, which
// kube-scheduler accepts and which invert a plugin's intent.
func checkProfiles(profiles []config.KubeSchedulerProfile, outOfTree runtime.Registry) error {
	registry := frameworkplugins.NewInTreeRegistry()
	if err := registry.Merge(outOfTree); err != nil {
		return err
	}
	for i, p := range profiles {
		if p.Plugins == nil {
			continue
		}
		for _, set := range pluginSets(p.Plugins) {
			for j, plugin := range set.Enabled {
				if _, ok := registry[plugin.Name]; !ok {
					return fmt.Errorf("profiles[%d].plugins.%s.enabled[%d].name: plugin %q does not exist", i, set.name, j, plugin.Name)
				}
				if plugin.Weight < 0 {
					return fmt.Errorf("profiles[%d].plugins.%s.enabled[%d].weight: %d must not be negative", i, set.name, j, plugin.Weight)
				}
			}
		}
	}
	return nil
}

// namedPluginSet is an extension point's plugin set and its field name.
type namedPluginSet struct {
	name string
	*config.PluginSet
}

// pluginSets are every extension point's plugin set in p, in the order of
// the fields of this Kubernetes minor's Plugins, each named as in the
// configuration's YAML.
func pluginSets(p *config.Plugins) []namedPluginSet {
	v := reflect.ValueOf(p).Elem()
	sets := make([]namedPluginSet, 0, v.NumField())
	for i := range v.NumField() {
		if set, ok := v.Field(i).Addr().Interface().(*config.PluginSet); ok {
			name := v.Type().Field(i).Name
			sets = append(sets, namedPluginSet{strings.ToLower(name[:1]) + name[1:], set})
		}
	}
	return sets
}

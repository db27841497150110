package observe

import (
	"bytes"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
)

// ObservedConfigFile reads the KubeSchedulerConfiguration at path (the
// defaults when path is empty) and returns it as v1 YAML whose profiles name
// the observing wrappers: the same transformation the scheduler applies at
// start-up, for tools that build a scheduler from a configuration file plus
// an out-of-tree registry (Recorder.Observe's) instead of running
// schedscope-scheduler. Every plugin is listed explicitly, and multiPoint
// defaults are disabled, so that decoding the file again does not add the
// unwrapped defaults back.
func ObservedConfigFile(path string) ([]byte, error) {
	cfg := &config.KubeSchedulerConfiguration{}
	var data []byte
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	gvk := configv1.SchemeGroupVersion.WithKind("KubeSchedulerConfiguration")
	if _, _, err := scheme.Codecs.UniversalDecoder().Decode(data, &gvk, cfg); err != nil {
		return nil, fmt.Errorf("decoding %q: %w", path, err)
	}
	WrapProfiles(cfg.Profiles)
	for i := range cfg.Profiles {
		mp := &cfg.Profiles[i].Plugins.MultiPoint
		mp.Disabled = append([]config.Plugin{{Name: "*"}}, mp.Disabled...)
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeYAML)
	if !ok {
		return nil, fmt.Errorf("no YAML serializer for the scheduler configuration")
	}
	var buf bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, configv1.SchemeGroupVersion).Encode(cfg, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

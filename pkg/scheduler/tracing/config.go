package tracing

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	tracingapi "k8s.io/component-base/tracing/api/v1"
)

// configScheme knows the apiserver.config.k8s.io kinds, of which the
// TracingConfiguration file is one, in every served version.
var (
	configScheme = runtime.NewScheme()
	configCodecs = serializer.NewCodecFactory(configScheme, serializer.EnableStrict)
)

func init() {
	install.Install(configScheme)
}

// LoadConfig reads a TracingConfiguration file the way kube-apiserver reads
// --tracing-config-file: a YAML or JSON object of kind TracingConfiguration
// in group apiserver.config.k8s.io (v1alpha1, v1beta1 or v1), decoded
// strictly, so that an unknown field is an error. Like kube-apiserver, it
// reads a file without apiVersion and kind as a TracingConfiguration. The
// result is validated; an error names the file and the offending field.
func LoadConfig(path string) (*tracingapi.TracingConfiguration, error) {
	if path == "" {
		return nil, fmt.Errorf("tracing configuration file path is empty")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tracing configuration: %w", err)
	}
	internal := &apiserver.TracingConfiguration{}
	if err := runtime.DecodeInto(configCodecs.UniversalDecoder(), data, internal); err != nil {
		return nil, fmt.Errorf("decoding tracing configuration %q: %w", path, err)
	}
	cfg := &internal.TracingConfiguration
	if err := validateConfig(cfg); err != nil {
		return nil, fmt.Errorf("invalid tracing configuration %q: %w", path, err)
	}
	return cfg, nil
}

// validateConfig checks cfg as kube-apiserver does; the errors name the
// fields of the file.
func validateConfig(cfg *tracingapi.TracingConfiguration) error {
	// The feature gate argument is unused by the validation.
	return tracingapi.ValidateTracingConfiguration(cfg, nil, nil).ToAggregate()
}

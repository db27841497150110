package tracing

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"sigs.k8s.io/yaml"
)

// Config is the tracing configuration file: a Kubernetes
// TracingConfiguration and the fields protocol and traceparent.
type Config struct {
	tracingapi.TracingConfiguration
	// Protocol is the OTLP protocol, grpc or http/protobuf; empty leaves
	// the choice to the environment (see Options.Protocol).
	Protocol Protocol
	// Traceparent is the role of a pod's TraceparentAnnotation, link or
	// parent; empty means link (see Options.Traceparent).
	Traceparent TraceparentRole
}

// The fields of the file that TracingConfiguration lacks.
const (
	protocolField    = "protocol"
	traceparentField = "traceparent"
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
// strictly, so that an unknown field is an error, with two more fields,
// protocol and traceparent. Like kube-apiserver, it reads a file without apiVersion and
// kind as a TracingConfiguration. The result is validated; an error names
// the file and the offending field.
func LoadConfig(path string) (*Config, error) {
	if path == "" {
		return nil, fmt.Errorf("tracing configuration file path is empty")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tracing configuration: %w", err)
	}
	protocol, data, err := splitField(data, protocolField)
	if err != nil {
		return nil, fmt.Errorf("decoding tracing configuration %q: %w", path, err)
	}
	traceparent, data, err := splitField(data, traceparentField)
	if err != nil {
		return nil, fmt.Errorf("decoding tracing configuration %q: %w", path, err)
	}
	internal := &apiserver.TracingConfiguration{}
	if err := runtime.DecodeInto(configCodecs.UniversalDecoder(), data, internal); err != nil {
		return nil, fmt.Errorf("decoding tracing configuration %q: %w", path, err)
	}
	cfg := &Config{TracingConfiguration: internal.TracingConfiguration, Protocol: Protocol(protocol), Traceparent: TraceparentRole(traceparent)}
	if err := validateConfig(&cfg.TracingConfiguration); err != nil {
		return nil, fmt.Errorf("invalid tracing configuration %q: %w", path, err)
	}
	if cfg.Protocol != "" {
		if err := validateProtocol(cfg.Protocol, field.NewPath(protocolField)); err != nil {
			return nil, fmt.Errorf("invalid tracing configuration %q: %w", path, err)
		}
	}
	if cfg.Traceparent != "" {
		if err := validateTraceparentRole(cfg.Traceparent, field.NewPath(traceparentField)); err != nil {
			return nil, fmt.Errorf("invalid tracing configuration %q: %w", path, err)
		}
	}
	return cfg, nil
}

// splitField returns the string field name of the file data and the rest
// of the file. Data without the field, or that is no YAML object, is
// returned as it is, for the strict decoder to judge.
func splitField(data []byte, name string) (string, []byte, error) {
	var fields map[string]any
	if err := yaml.Unmarshal(data, &fields); err != nil {
		return "", data, nil
	}
	value, ok := fields[name]
	if !ok {
		return "", data, nil
	}
	s, ok := value.(string)
	if !ok {
		return "", nil, field.Invalid(field.NewPath(name), value, "must be a string")
	}
	delete(fields, name)
	rest, err := json.Marshal(fields)
	if err != nil {
		return "", nil, err
	}
	return s, rest, nil
}

// validateConfig checks cfg as kube-apiserver does; the errors name the
// fields of the file.
func validateConfig(cfg *tracingapi.TracingConfiguration) error {
	// The feature gate argument is unused by the validation.
	return tracingapi.ValidateTracingConfiguration(cfg, nil, nil).ToAggregate()
}

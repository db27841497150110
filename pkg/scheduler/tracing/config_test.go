package tracing_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    *tracing.Config
		// wantErr lists substrings of the expected error.
		wantErr []string
	}{
		{
			name: "v1beta1",
			content: `apiVersion: apiserver.config.k8s.io/v1beta1
kind: TracingConfiguration
endpoint: localhost:4317
samplingRatePerMillion: 1000000
`,
			want: &tracing.Config{TracingConfiguration: tracingapi.TracingConfiguration{Endpoint: ptr.To("localhost:4317"), SamplingRatePerMillion: ptr.To[int32](1000000)}},
		},
		{
			name:    "v1 as JSON, rate unset",
			content: `{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "TracingConfiguration", "endpoint": "unix:///run/otel.sock"}`,
			want:    &tracing.Config{TracingConfiguration: tracingapi.TracingConfiguration{Endpoint: ptr.To("unix:///run/otel.sock")}},
		},
		{
			name:    "v1alpha1, empty",
			content: "apiVersion: apiserver.config.k8s.io/v1alpha1\nkind: TracingConfiguration\n",
			want:    &tracing.Config{},
		},
		{
			name:    "rate above one million",
			content: "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nsamplingRatePerMillion: 2000000\n",
			wantErr: []string{"samplingRatePerMillion", "less than or equal to one million"},
		},
		{
			name:    "negative rate",
			content: "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\n",
			wantErr: []string{"samplingRatePerMillion", "must be positive"},
		},
		{
			name:    "endpoint with an unsupported scheme",
			content: "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: http://collector:4317\n",
			wantErr: []string{"endpoint", "unsupported scheme"},
		},
		{
			name:    "unknown field",
			content: "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nsamplingRate: 5\n",
			wantErr: []string{"decoding", "samplingRate"},
		},
		{
			name:    "wrong kind",
			content: "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\negressSelections: []\n",
			wantErr: []string{"decoding"},
		},
		{
			name:    "protocol http/protobuf",
			content: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: collector:4318\nprotocol: http/protobuf\nsamplingRatePerMillion: 100\n",
			want: &tracing.Config{
				TracingConfiguration: tracingapi.TracingConfiguration{Endpoint: ptr.To("collector:4318"), SamplingRatePerMillion: ptr.To[int32](100)},
				Protocol:             tracing.ProtocolHTTPProtobuf,
			},
		},
		{
			name:    "protocol grpc, as JSON",
			content: `{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "TracingConfiguration", "protocol": "grpc"}`,
			want:    &tracing.Config{Protocol: tracing.ProtocolGRPC},
		},
		{
			name:    "unsupported protocol",
			content: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nprotocol: http/json\n",
			wantErr: []string{"protocol", `"http/json"`, `supported values: "grpc", "http/protobuf"`},
		},
		{
			name:    "protocol not a string",
			content: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nprotocol: 4318\n",
			wantErr: []string{"protocol", "must be a string"},
		},
		{
			name:    "unknown field beside protocol",
			content: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nprotocol: grpc\nsamplingRate: 5\n",
			wantErr: []string{"decoding", "samplingRate"},
		},
		{
			name:    "invalid endpoint beside protocol",
			content: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nprotocol: http/protobuf\nendpoint: http://collector:4318\n",
			wantErr: []string{"endpoint", "unsupported scheme"},
		},
		{
			name:    "traceparent parent",
			content: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\ntraceparent: parent\nprotocol: grpc\n",
			want:    &tracing.Config{Protocol: tracing.ProtocolGRPC, Traceparent: tracing.TraceparentParent},
		},
		{
			name:    "traceparent link, as JSON",
			content: `{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "TracingConfiguration", "traceparent": "link"}`,
			want:    &tracing.Config{Traceparent: tracing.TraceparentLink},
		},
		{
			name:    "unsupported traceparent",
			content: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\ntraceparent: child\n",
			wantErr: []string{"traceparent", `"child"`, `supported values: "link", "parent"`},
		},
		{
			name:    "traceparent not a string",
			content: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\ntraceparent: true\n",
			wantErr: []string{"traceparent", "must be a string"},
		},
		{
			// kube-apiserver reads such a file as a TracingConfiguration too.
			name:    "no apiVersion and kind",
			content: "endpoint: localhost:4317\n",
			want:    &tracing.Config{TracingConfiguration: tracingapi.TracingConfiguration{Endpoint: ptr.To("localhost:4317")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tracing.yaml")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := tracing.LoadConfig(path)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("LoadConfig() = %+v, want an error", got)
				}
				for _, want := range append(tt.wantErr, path) {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LoadConfig() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	if _, err := tracing.LoadConfig(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadConfig(missing file) error = %v, want one naming %s", err, path)
	}
	if _, err := tracing.LoadConfig(""); err == nil {
		t.Errorf("LoadConfig(\"\") succeeded, want an error")
	}
}

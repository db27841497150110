package tracing

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// newResource describes the scheduler process. From lowest to highest
// precedence: the scheduler's own attributes (service.name, service.version,
// service.instance.id, schedscope.profiles, host.name and the SDK's), then
// the environment (OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, as every
// OpenTelemetry SDK reads them), then k8s.cluster.name from
// Options.ClusterName. A malformed OTEL_RESOURCE_ATTRIBUTES is an error.
func newResource(ctx context.Context, opts Options) (*resource.Resource, error) {
	instanceID := opts.InstanceID
	if instanceID == "" {
		instanceID = uuid.NewString()
	}
	attrs := []attribute.KeyValue{
		semconv.ServiceName(ServiceName),
		semconv.ServiceVersion(opts.Version),
		semconv.ServiceInstanceID(instanceID),
	}
	if len(opts.Profiles) > 0 {
		attrs = append(attrs, ProfilesKey.StringSlice(opts.Profiles))
	}
	own, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(attrs...),
		resource.WithHost(),
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("describing the tracing resource: %w", err)
	}
	env, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("reading the tracing resource from OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME: %w", err)
	}
	res, err := resource.Merge(own, env)
	if err != nil {
		return nil, fmt.Errorf("merging the tracing resource with the environment's: %w", err)
	}
	if opts.ClusterName != "" {
		cluster := resource.NewWithAttributes(semconv.SchemaURL, semconv.K8SClusterName(opts.ClusterName))
		if res, err = resource.Merge(res, cluster); err != nil {
			return nil, fmt.Errorf("adding the cluster name to the tracing resource: %w", err)
		}
	}
	return res, nil
}

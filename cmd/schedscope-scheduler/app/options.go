package app

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/schedscope/schedscope/pkg/scheduler/observe"
	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
	"github.com/schedscope/schedscope/pkg/stream"
)

// RecordOptions configure the decision records and their stream.
type RecordOptions struct {
	// BufferSize is how many records the stream keeps for readers.
	BufferSize int
	// BufferBytes bounds the compressed records the stream keeps.
	BufferBytes int
	// QueueSize bounds the attempts waiting to become records.
	QueueSize int
	// BindAddress is host:port of the record stream; empty disables it.
	BindAddress string
	// AllowRemote serves the stream over TLS, authenticated and authorized
	// like the secure port, and permits a BindAddress that is not loopback.
	AllowRemote bool
	// Bookmark is the interval of keep-alive events on idle watches.
	Bookmark time.Duration
	// TracingConfigFile is a TracingConfiguration file; empty turns tracing off.
	TracingConfigFile string
	// SlowAttempt is the duration above which an attempt is always traced.
	SlowAttempt time.Duration
	// FollowTraceparentSampling lets a pod's traceparent annotation decide
	// whether its attempts are traced; it needs the tracing configuration's
	// traceparent: parent.
	FollowTraceparentSampling bool
	// ClusterName is the traces' k8s.cluster.name.
	ClusterName string
	// Transport secures the connection to the trace collector.
	Transport tracing.Transport
	// Shadows are the shadow profiles, each with its live profile.
	Shadows []observe.Shadow
	// ShadowSampleEvery runs the shadows in every n-th attempt of their
	// live profile.
	ShadowSampleEvery int
}

// NewRecordOptions returns the defaults.
func NewRecordOptions() *RecordOptions {
	return &RecordOptions{BufferSize: stream.DefaultBufferSize, BufferBytes: stream.DefaultBufferBytes, QueueSize: 4096, BindAddress: "127.0.0.1:10262", Bookmark: 10 * time.Second, SlowAttempt: time.Second, ShadowSampleEvery: 1}
}

// AddFlags adds the options' flags to fs.
func (o *RecordOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.BufferSize, "record-buffer-size", o.BufferSize, "Number of decision records the record stream keeps for readers; older ones are dropped and counted.")
	fs.IntVar(&o.BufferBytes, "record-buffer-bytes", o.BufferBytes, "Bytes of decision records, compressed, the record stream keeps for readers (a record at 5000 nodes is about 30 kB of JSON, 6 kB compressed); older ones are dropped and counted. The newest record is always kept.")
	fs.IntVar(&o.QueueSize, "record-queue-size", o.QueueSize, "Number of finished attempts that may wait to become records; beyond it attempts are dropped and counted, never waited for.")
	fs.StringVar(&o.BindAddress, "record-stream-address", o.BindAddress, "host:port the record stream listens on; empty disables it. Must be loopback unless --record-stream-allow-remote is set.")
	fs.BoolVar(&o.AllowRemote, "record-stream-allow-remote", o.AllowRemote, "Serve the record stream over TLS and authenticated like the secure port: with its serving certificate, to callers its delegated authentication knows and its delegated authorization allows to get the path /v1/records. This allows a non-loopback --record-stream-address. Off, the stream is plain HTTP without authentication, on loopback only.")
	fs.DurationVar(&o.Bookmark, "record-stream-bookmark-interval", o.Bookmark, "Interval of keep-alive events on an idle watch of the record stream.")
	fs.StringVar(&o.TracingConfigFile, "tracing-config-file", o.TracingConfigFile, "File with the apiserver.config.k8s.io TracingConfiguration (endpoint, samplingRatePerMillion) and the OTLP protocol (grpc or http/protobuf) and the role of a pod's schedscope.io/traceparent (link, the default, or parent) for OpenTelemetry traces of scheduling attempts; the OTEL_EXPORTER_OTLP_* variables set what it does not. Empty turns tracing off.")
	fs.BoolVar(&o.FollowTraceparentSampling, "tracing-follow-traceparent-sampling", o.FollowTraceparentSampling, "Let the sampled flag of a pod's schedscope.io/traceparent annotation decide whether its attempts are traced; needs traceparent: parent in --tracing-config-file. Off, the sampling rate decides: whoever creates a pod writes its annotations.")
	fs.StringVar(&o.ClusterName, "tracing-cluster-name", o.ClusterName, "The cluster's name, the k8s.cluster.name of the traces' resource. The resource also takes OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME from the environment.")
	fs.StringVar(&o.Transport.CAFile, "tracing-ca-file", o.Transport.CAFile, "PEM certificates that verify the trace collector's serving certificate. Empty: the system's roots. TLS is used unless the endpoint is loopback or a unix socket and no TLS file is given, or --tracing-insecure is set. Any of the TLS flags replaces the OTEL_EXPORTER_OTLP_* security variables.")
	fs.StringVar(&o.Transport.CertFile, "tracing-client-cert-file", o.Transport.CertFile, "PEM client certificate presented to the trace collector (with --tracing-client-key-file); read again at each connection.")
	fs.StringVar(&o.Transport.KeyFile, "tracing-client-key-file", o.Transport.KeyFile, "PEM private key of --tracing-client-cert-file.")
	fs.BoolVar(&o.Transport.Insecure, "tracing-insecure", o.Transport.Insecure, "Send traces in plain text (gRPC or HTTP), without TLS, to a collector that is not on loopback.")
	fs.Var(shadowFlag{&o.Shadows}, "shadow-profile", "<shadow>=<live>: the profile whose schedulerName is <shadow> is a shadow of the profile <live>, both profiles of the configuration. "+
		"A shadow schedules no pod, not even one that names it: within the scheduling cycle of each sampled attempt of <live> it computes, on the same cluster state, where it would have put the pod, "+
		"and the attempt's record holds its answer beside the live one. It binds, reserves, permits, preempts, nominates and writes nothing. Repeat the flag for more shadows.")
	fs.IntVar(&o.ShadowSampleEvery, "shadow-sample-every", o.ShadowSampleEvery, "Run the shadow profiles in every n-th attempt of their live profile, the first included; 1 runs them in every attempt.")
	fs.DurationVar(&o.SlowAttempt, "tracing-slow-attempt-threshold", o.SlowAttempt, "Attempts that spend longer than this in the scheduler (queue wait excluded) are traced whatever the sampling rate, as are unschedulable and failed attempts. Negative turns the rule off.")
}

// Validate reports every invalid option, naming its flag.
func (o *RecordOptions) Validate() []error {
	var errs []error
	if o.BufferSize < 1 {
		errs = append(errs, fmt.Errorf("--record-buffer-size: must be at least 1, got %d", o.BufferSize))
	}
	if o.BufferBytes < 1 {
		errs = append(errs, fmt.Errorf("--record-buffer-bytes: must be at least 1, got %d", o.BufferBytes))
	}
	if o.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("--record-queue-size: must be at least 1, got %d", o.QueueSize))
	}
	if o.Bookmark <= 0 {
		errs = append(errs, fmt.Errorf("--record-stream-bookmark-interval: must be positive, got %s", o.Bookmark))
	}
	if o.ShadowSampleEvery < 1 {
		errs = append(errs, fmt.Errorf("--shadow-sample-every: must be at least 1, got %d", o.ShadowSampleEvery))
	}
	errs = append(errs, o.validateTracing()...)
	if o.BindAddress != "" {
		host, port, err := net.SplitHostPort(o.BindAddress)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--record-stream-address: %q is not host:port: %w", o.BindAddress, err))
		case port == "":
			errs = append(errs, fmt.Errorf("--record-stream-address: %q has no port", o.BindAddress))
		case !o.AllowRemote && !isLoopback(host):
			errs = append(errs, fmt.Errorf("--record-stream-address: %q is not a loopback address; set --record-stream-allow-remote to serve the stream there, over TLS and authenticated like the secure port", o.BindAddress))
		}
	}
	return errs
}

// validateTracing checks the tracing flags against each other.
func (o *RecordOptions) validateTracing() []error {
	var errs []error
	if o.TracingConfigFile == "" {
		for _, f := range []struct {
			flag string
			set  bool
		}{
			{"tracing-cluster-name", o.ClusterName != ""}, {"tracing-ca-file", o.Transport.CAFile != ""},
			{"tracing-client-cert-file", o.Transport.CertFile != ""}, {"tracing-client-key-file", o.Transport.KeyFile != ""},
			{"tracing-insecure", o.Transport.Insecure},
		} {
			if f.set {
				errs = append(errs, fmt.Errorf("--%s: tracing is off; set --tracing-config-file", f.flag))
			}
		}
	}
	if (o.Transport.CertFile == "") != (o.Transport.KeyFile == "") {
		errs = append(errs, fmt.Errorf("--tracing-client-cert-file and --tracing-client-key-file go together; only one is set"))
	}
	if o.Transport.Insecure && (o.Transport.CAFile != "" || o.Transport.CertFile != "") {
		errs = append(errs, fmt.Errorf("--tracing-insecure: plain text takes no --tracing-ca-file or --tracing-client-cert-file"))
	}
	return errs
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

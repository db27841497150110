package tracing

import (
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Protocol is the OTLP transport the spans are exported with.
type Protocol string

// The OTLP protocols, named as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	ProtocolGRPC         Protocol = "grpc"
	ProtocolHTTPProtobuf Protocol = "http/protobuf"
)

// The environment variables that choose the protocol when neither the
// configuration file nor Options.Protocol does; the per-signal one wins.
const (
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// supportedProtocols lists the values a protocol may take.
var supportedProtocols = []string{string(ProtocolGRPC), string(ProtocolHTTPProtobuf)}

// validateProtocol returns an error naming path and the bad value unless
// p is a supported protocol.
func validateProtocol(p Protocol, path *field.Path) error {
	switch p {
	case ProtocolGRPC, ProtocolHTTPProtobuf:
		return nil
	}
	return field.NotSupported(path, p, supportedProtocols)
}

// resolveProtocol returns p, or when p is empty the protocol of the
// environment, as the OTLP exporter specification has it, or gRPC.
func resolveProtocol(p Protocol) (Protocol, error) {
	if p != "" {
		return p, validateProtocol(p, field.NewPath("protocol"))
	}
	for _, name := range []string{envTracesProtocol, envProtocol} {
		if value := strings.TrimSpace(os.Getenv(name)); value != "" {
			return Protocol(value), validateProtocol(Protocol(value), field.NewPath(name))
		}
	}
	return ProtocolGRPC, nil
}

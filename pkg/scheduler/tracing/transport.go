package tracing

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// Transport secures the connection to the collector. The zero value speaks
// plain text to a loopback or unix socket endpoint and TLS, verified
// against the system's roots, to any other, unless the OTEL_EXPORTER_OTLP_*
// variables set the endpoint or the security (see newExporter). A set
// field wins over those variables.
type Transport struct {
	// CAFile holds the PEM certificates that verify the collector's serving
	// certificate; empty means the system's roots. Setting it (or CertFile)
	// uses TLS on loopback too.
	CAFile string
	// CertFile and KeyFile are the PEM client certificate and key presented
	// to a collector that asks for one; both or neither. They are read again
	// at each connection, so a renewed certificate is used without restart.
	CertFile, KeyFile string
	// Insecure speaks plain text to any endpoint; it excludes the files.
	Insecure bool
}

// tlsConfig returns the client TLS configuration for endpoint, or nil for
// plain text, or an error naming the field at fault.
func (t Transport) tlsConfig(endpoint string) (*tls.Config, error) {
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("tracing client certificate: the certificate and key files go together, one is missing")
	}
	hasFiles := t.CAFile != "" || t.CertFile != ""
	if t.Insecure {
		if hasFiles {
			return nil, errors.New("tracing: an insecure connection takes no CA or client certificate file")
		}
		return nil, nil
	}
	if !hasFiles && isLocal(endpoint) {
		return nil, nil
	}
	config := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pemData, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tracing CA file: %w", err)
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("tracing CA file %q holds no PEM certificate", t.CAFile)
		}
	}
	if t.CertFile != "" {
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			return nil, fmt.Errorf("tracing client certificate %q and key %q: %w", t.CertFile, t.KeyFile, err)
		}
		config.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			return &cert, err
		}
	}
	return config, nil
}

// isLocal reports whether endpoint, host:port or unix:path, stays on this
// machine.
func isLocal(endpoint string) bool {
	if strings.HasPrefix(endpoint, "unix:") {
		return true
	}
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

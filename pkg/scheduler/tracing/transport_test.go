package tracing_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/apimachinery/pkg/util/wait"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
)

// testPKI is a CA with a serving certificate for 127.0.0.1 and a client
// certificate, as PEM files in a directory.
type testPKI struct {
	caFile, serverCert, serverKey, clientCert, clientKey string
	pool                                                 *x509.CertPool
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "collector-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, block *pem.Block) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	issue := func(name string, serial int64, tmpl *x509.Certificate) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.SerialNumber, tmpl.Subject = big.NewInt(serial), pkix.Name{CommonName: name}
		tmpl.NotBefore, tmpl.NotAfter, tmpl.KeyUsage = ca.NotBefore, ca.NotAfter, x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".crt", &pem.Block{Type: "CERTIFICATE", Bytes: der}),
			write(name+".key", &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	}
	p := testPKI{caFile: write("ca.crt", &pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.serverCert, p.serverKey = issue("collector", 2, &x509.Certificate{
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	p.clientCert, p.clientKey = issue("schedscope-scheduler", 3, &x509.Certificate{
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return p
}

// serverOption serves TLS with the PKI's serving certificate and, with
// clientAuth, requires a client certificate of its CA.
func (p testPKI) serverOption(t *testing.T, clientAuth bool) grpc.ServerOption {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	config := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientAuth {
		config.ClientAuth, config.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
	}
	return grpc.Creds(credentials.NewTLS(config))
}

// TestOTLPResourceOverTLS exports to a real OTLP gRPC receiver that serves
// TLS and requires a client certificate: the resource carries the
// environment's attributes, the cluster name, the version and a
// service.instance.id of its own per Tracer.
func TestOTLPResourceOverTLS(t *testing.T) {
	pki := newTestPKI(t)
	r, endpoint := startReceiver(t, pki.serverOption(t, true))
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging,k8s.pod.name=schedscope-0,k8s.namespace.name=schedscope")
	t.Setenv("OTEL_SERVICE_NAME", "schedscope-scheduler-east")
	transport := tracing.Transport{CAFile: pki.caFile, CertFile: pki.clientCert, KeyFile: pki.clientKey}

	var instances []string
	for range 2 {
		resource := exportOne(t, endpoint, r, tracing.Options{Version: "v0.3.0", ClusterName: "east-1", Transport: transport})
		want := map[string]any{
			"service.name":                "schedscope-scheduler-east",
			"service.version":             "v0.3.0",
			"k8s.cluster.name":            "east-1",
			"k8s.pod.name":                "schedscope-0",
			"k8s.namespace.name":          "schedscope",
			"deployment.environment.name": "staging",
		}
		got := otlpAttrs(resource)
		instance, _ := got["service.instance.id"].(string)
		if _, err := uuid.Parse(instance); err != nil {
			t.Errorf("service.instance.id %q is not a UUID: %v", instance, err)
		}
		instances = append(instances, instance)
		for k := range got {
			if _, ok := want[k]; !ok {
				delete(got, k)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("resource (-want +got):\n%s", diff)
		}
	}
	if instances[0] == instances[1] {
		t.Errorf("two Tracers share service.instance.id %q", instances[0])
	}
}

// exportOne traces one attempt through a new Tracer with opts into r at
// endpoint and returns the resource r received with it.
func exportOne(t *testing.T, endpoint string, r *receiver, opts tracing.Options) []*commonpb.KeyValue {
	t.Helper()
	ctx := context.Background()
	before := receivedSpans(r)
	tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{Endpoint: &endpoint, SamplingRatePerMillion: ptr.To[int32](1_000_000)}, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer func() {
		if err := tr.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	rec := scheduledRecord("web-1", "uid-1")
	tr.Trace(podOf(rec, nil), rec)
	if err := tr.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return receivedSpans(r) >= before+len(scheduledTree), nil
	}); err != nil {
		t.Fatalf("received %d spans, want %d: %v (failed exports: %d)", receivedSpans(r)-before, len(scheduledTree), err, tr.FailedSpans())
	}
	resource, _, _ := r.received()
	return resource
}

func receivedSpans(r *receiver) int {
	_, spans, _ := r.received()
	return len(spans)
}

// TestOTLPTransportRefused: a TLS collector gets nothing from a client
// that does not trust it or has no certificate to show; the spans count as
// failed.
func TestOTLPTransportRefused(t *testing.T) {
	pki := newTestPKI(t)
	other := newTestPKI(t)
	r, endpoint := startReceiver(t, pki.serverOption(t, true))
	for _, tc := range []struct {
		name      string
		transport tracing.Transport
	}{
		{name: "plain gRPC to loopback", transport: tracing.Transport{}},
		{name: "collector signed by another CA", transport: tracing.Transport{CAFile: other.caFile, CertFile: pki.clientCert, KeyFile: pki.clientKey}},
		{name: "no client certificate", transport: tracing.Transport{CAFile: pki.caFile}},
		{name: "client certificate of another CA", transport: tracing.Transport{CAFile: pki.caFile, CertFile: other.clientCert, KeyFile: other.clientKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each waits for its export to give up, 10s.
			t.Parallel()
			ctx := context.Background()
			tr, err := tracing.New(ctx, &tracingapi.TracingConfiguration{Endpoint: &endpoint, SamplingRatePerMillion: ptr.To[int32](1_000_000)},
				tracing.Options{Transport: tc.transport})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			rec := scheduledRecord("web-1", "uid-1")
			tr.Trace(podOf(rec, nil), rec)
			_ = tr.ForceFlush(ctx)
			if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
				return tr.FailedSpans() > 0, nil
			}); err != nil {
				t.Errorf("FailedSpans() = 0, want the export to fail")
			}
			shutdownCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_ = tr.Shutdown(shutdownCtx)
			if n := receivedSpans(r); n != 0 {
				t.Errorf("the collector received %d spans", n)
			}
		})
	}
}

// TestTransportValidation: contradictory or unreadable transport settings
// are errors at New that name the problem.
func TestTransportValidation(t *testing.T) {
	pki := newTestPKI(t)
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		transport tracing.Transport
		wantErr   string
	}{
		{name: "insecure with a CA", transport: tracing.Transport{Insecure: true, CAFile: pki.caFile}, wantErr: "insecure connection takes no CA or client certificate"},
		{name: "certificate without key", transport: tracing.Transport{CertFile: pki.clientCert}, wantErr: "one is missing"},
		{name: "key without certificate", transport: tracing.Transport{KeyFile: pki.clientKey}, wantErr: "one is missing"},
		{name: "missing CA file", transport: tracing.Transport{CAFile: filepath.Join(t.TempDir(), "nope.crt")}, wantErr: "tracing CA file: open"},
		{name: "CA file without certificates", transport: tracing.Transport{CAFile: empty}, wantErr: "holds no PEM certificate"},
		{name: "key of another certificate", transport: tracing.Transport{CertFile: pki.clientCert, KeyFile: pki.serverKey}, wantErr: "private key does not match public key"},
		{name: "valid mutual TLS", transport: tracing.Transport{CAFile: pki.caFile, CertFile: pki.clientCert, KeyFile: pki.clientKey}},
		{name: "insecure", transport: tracing.Transport{Insecure: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := "collector.example:4317"
			tr, err := tracing.New(context.Background(), &tracingapi.TracingConfiguration{Endpoint: &endpoint}, tracing.Options{Transport: tc.transport})
			if tr != nil {
				defer func() { _ = tr.Shutdown(context.Background()) }()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("New: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestMalformedResourceEnvironment: a malformed OTEL_RESOURCE_ATTRIBUTES
// stops New with an error naming it, instead of a resource missing what
// the operator asked for.
func TestMalformedResourceEnvironment(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "k8s.cluster.name")
	endpoint := "127.0.0.1:4317"
	_, err := tracing.New(context.Background(), &tracingapi.TracingConfiguration{Endpoint: &endpoint}, tracing.Options{})
	if err == nil || !strings.Contains(err.Error(), "OTEL_RESOURCE_ATTRIBUTES") {
		t.Errorf("New: error %v, want one naming OTEL_RESOURCE_ATTRIBUTES", err)
	}
}

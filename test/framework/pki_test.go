package framework

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteServingCert checks that the sidecar's serving certificate
// verifies, with the CA bundle the APIService carries, under every name
// the kube-apiserver and the tests reach it by, and under no other.
func TestWriteServingCert(t *testing.T) {
	dir := t.TempDir()
	ca, err := writeServingCert(dir, sidecarHosts)
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ca, onDisk) {
		t.Errorf("the returned CA bundle differs from ca.crt")
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("the CA bundle holds no certificate")
	}
	for _, tt := range []struct {
		name   string
		wantOK bool
	}{
		{"schedscope-sidecar.schedscope.svc", true}, // the aggregator's ServerName
		{"schedscope-sidecar.schedscope", true},
		{"localhost", true},
		{"127.0.0.1", true},
		{"schedscope-api.schedscope.svc", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := leaf.Verify(x509.VerifyOptions{DNSName: tt.name, Roots: roots})
			if gotOK := err == nil; gotOK != tt.wantOK {
				t.Errorf("verifying for %s: %v, want ok %v", tt.name, err, tt.wantOK)
			}
		})
	}
}

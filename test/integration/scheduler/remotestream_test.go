package scheduler

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedscope/schedscope/pkg/stream"
	"github.com/schedscope/schedscope/test/framework"
	"github.com/schedscope/schedscope/test/freeport"
)

// TestRemoteRecordStream starts a scheduler whose record stream listens on
// every address with --record-stream-allow-remote, and checks that the
// stream is served over TLS with the scheduler's serving certificate, and
// only to callers the kube-apiserver authenticates and authorizes to get
// the path /v1/records.
func TestRemoteRecordStream(t *testing.T) {
	const profile = "remote-stream-test"
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	s := startDedicatedScheduler(t, profile, fmt.Sprintf("--record-stream-address=0.0.0.0:%d", port), "--record-stream-allow-remote", "--record-stream-bookmark-interval=200ms")
	if want := fmt.Sprintf("https://127.0.0.1:%d%s", port, stream.Path); s.StreamURL != want {
		t.Fatalf("stream URL %q, want %q", s.StreamURL, want)
	}
	ns := createNamespace(t)
	createNodes(t, nodeSpec{name: "remote-stream-node", cpu: "100", memory: "100Gi"})
	pod := createPod(t, st.MakePod().Namespace(ns).Name("remote").SchedulerName(profile).Obj())
	waitForBinding(t, pod)

	// The admin reads the list, with the pod's record.
	var list stream.List
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		body, err := framework.GetWithToken(s.StreamURL)
		if err != nil {
			return false, err
		}
		list = stream.List{}
		if err := json.Unmarshal(body, &list); err != nil {
			return false, fmt.Errorf("decoding the list %.200s: %w", body, err)
		}
		for _, r := range list.Items {
			if r.Attempt.Pod.UID == string(pod.UID) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the admin's list (epoch %q, %d records) never held the pod's record: %v", list.Epoch, len(list.Items), err)
	}

	// Others get a Status with a message, and nothing of the stream.
	for _, tt := range []struct {
		name, token string
		wantCode    int
		wantMessage string
	}{
		{name: "no token", wantCode: http.StatusUnauthorized, wantMessage: `"message":"Unauthorized"`},
		{name: "unknown token", token: "not-a-token", wantCode: http.StatusUnauthorized, wantMessage: `"message":"Unauthorized"`},
		{name: "viewer without rights", token: framework.ViewerToken, wantCode: http.StatusForbidden, wantMessage: `User \"viewer\" cannot get path \"/v1/records\"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body, err := framework.GetAs(s.StreamURL, tt.token)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode || !strings.Contains(string(body), `"kind":"Status"`) || !strings.Contains(string(body), tt.wantMessage) {
				t.Errorf("%d %s; want %d, a Status with %s", code, body, tt.wantCode, tt.wantMessage)
			}
			if strings.Contains(string(body), string(pod.UID)) || strings.Contains(string(body), `"items"`) || strings.Contains(string(body), list.Epoch) {
				t.Errorf("the refusal holds some of the stream: %s", body)
			}
		})
	}

	// Plain HTTP reads nothing.
	plain := fmt.Sprintf("http://127.0.0.1:%d%s", port, stream.Path)
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(plain); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(string(body), string(pod.UID)) {
			t.Errorf("GET %s: %d %s, want a failure", plain, resp.StatusCode, body)
		}
	}

	// The certificate is the secure port's.
	health, err := url.Parse(s.HealthURL)
	if err != nil {
		t.Fatal(err)
	}
	if streamCert, secureCert := servedCertificate(t, fmt.Sprintf("127.0.0.1:%d", port)), servedCertificate(t, health.Host); !bytes.Equal(streamCert.Raw, secureCert.Raw) {
		t.Errorf("the stream serves the certificate of %q, the secure port that of %q", streamCert.Subject, secureCert.Subject)
	}

	// The sidecar's client verifies it with the scheduler's CA and sends
	// the token of a file: a list and a watch.
	caFile := filepath.Join(controlPlane.Dir, profile+"-certs", "kube-scheduler.crt")
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("the scheduler's self-signed certificate: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	verifying := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(controlPlane.Config.BearerToken), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := stream.NewClient(s.StreamURL, verifying, stream.WithTokenFile(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := c.Open(ctx, stream.Request{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	_, err = stream.DecodeList(body, func(_ string, r stream.Record) error {
		found = found || r.Attempt.Pod.UID == string(pod.UID)
		return nil
	})
	body.Close()
	if err != nil || !found {
		t.Errorf("list with the token file: found the pod's record %t, err %v", found, err)
	}
	if head, err := c.Head(ctx, list.Epoch); err != nil || head < 1 {
		t.Errorf("watch with the token file: head %d, err %v", head, err)
	}
	if err := os.WriteFile(tokenFile, []byte(framework.ViewerToken), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(ctx, stream.Request{}); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("list with the viewer's token in the file: got %v, want 403", err)
	}
}

// servedCertificate returns the certificate served at addr.
func servedCertificate(t *testing.T, addr string) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the certificate is what is compared
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

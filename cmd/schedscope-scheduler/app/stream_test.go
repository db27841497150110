package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"

	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/stream"
)

// fakeDelegation authenticates as the delegated authenticator does (no
// credentials is system:anonymous, an unknown token an error): token
// "alice-token" is alice, "bob-token" is bob. It authorizes alice alone to
// get the path /v1/records, and records what it was asked.
type fakeDelegation struct {
	mu    sync.Mutex
	asked []string
}

func (f *fakeDelegation) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	switch r.Header.Get("Authorization") {
	case "":
		return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}, true, nil
	case "Bearer alice-token":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}}, true, nil
	case "Bearer bob-token":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}}, true, nil
	default:
		return nil, false, errors.New("invalid bearer token")
	}
}

func (f *fakeDelegation) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	desc := fmt.Sprintf("%s %s resource=%t %s", a.GetUser().GetName(), a.GetVerb(), a.IsResourceRequest(), a.GetPath())
	f.mu.Lock()
	f.asked = append(f.asked, desc)
	f.mu.Unlock()
	if desc == "alice get resource=false "+stream.Path {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (f *fakeDelegation) questions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// freeAddress returns a loopback address no one listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRemoteStreamIsAuthenticated serves a stream of one record as
// --record-stream-allow-remote does, with a self-signed serving certificate
// and fake delegated authentication and authorization, and checks who reads
// what.
func TestRemoteStreamIsAuthenticated(t *testing.T) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := dynamiccertificates.NewStaticCertKeyContent("serving", certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeDelegation{}
	cc := (&schedulerserverconfig.Config{
		SecureServing:  &server.SecureServingInfo{Cert: cert},
		Authentication: server.AuthenticationInfo{Authenticator: fake},
		Authorization:  server.AuthorizationInfo{Authorizer: authorizer.AuthorizerFunc(fake.Authorize)},
	}).Complete()
	buf := stream.NewBuffer(10, stream.DefaultBufferBytes, "e1")
	if err := buf.Add(recordtest.MakeAttempt("shop", "web", "uid-web").Scheduled("n1").Obj(), ""); err != nil {
		t.Fatal(err)
	}
	o := NewRecordOptions()
	o.BindAddress, o.AllowRemote = freeAddress(t), true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := serveStream(ctx, o, &cc, stream.NewServer(buf, time.Second)); err != nil {
		t.Fatal(err)
	}
	streamURL := "https://" + o.BindAddress + stream.Path

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	get := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, streamURL, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", streamURL, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tt := range []struct {
		name, token string
		wantCode    int
		wantBody    string
	}{
		{name: "no token", wantCode: http.StatusUnauthorized, wantBody: `"message":"Unauthorized"`},
		{name: "unknown token", token: "mallory-token", wantCode: http.StatusUnauthorized, wantBody: `"message":"Unauthorized"`},
		{name: "not allowed", token: "bob-token", wantCode: http.StatusForbidden, wantBody: `"message":"forbidden: User \"bob\" cannot get path \"/v1/records\""`},
		{name: "allowed", token: "alice-token", wantCode: http.StatusOK, wantBody: `"uid":"uid-web"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(tt.token)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("GET with %q: %d %s; want %d with %s", tt.token, code, body, tt.wantCode, tt.wantBody)
			}
			if code != http.StatusOK && (strings.Contains(body, "uid-web") || strings.Contains(body, `"items"`) || strings.Contains(body, `"epoch"`)) {
				t.Errorf("refusal holds some of the stream: %s", body)
			}
		})
	}
	want := []string{"bob get resource=false /v1/records", "alice get resource=false /v1/records"}
	if got := fake.questions(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("authorizer asked %q, want %q: callers without a known name are not asked about", got, want)
	}

	// The sidecar's client: the CA verifies the certificate, the token is
	// read from its file.
	caFile, tokenFile := filepath.Join(t.TempDir(), "ca.crt"), filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("alice-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := stream.NewClient(streamURL, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}, stream.WithTokenFile(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.Open(ctx, stream.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	_, err = stream.DecodeList(body, func(_ string, r stream.Record) error {
		uids = append(uids, r.Attempt.Pod.UID)
		return nil
	})
	body.Close()
	if err != nil || len(uids) != 1 || uids[0] != "uid-web" {
		t.Errorf("list with the token file: %v %v, want uid-web", uids, err)
	}

	// Plain HTTP reads nothing.
	resp, err := http.Get("http://" + o.BindAddress + stream.Path)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(string(b), "uid-web") {
			t.Errorf("plain HTTP: %d %s", resp.StatusCode, b)
		}
	}
}

// TestLoopbackStreamIsPlain checks that without --record-stream-allow-remote
// the stream is plain HTTP with no authentication, as the sidecar in the
// scheduler's pod reads it.
func TestLoopbackStreamIsPlain(t *testing.T) {
	buf := stream.NewBuffer(10, stream.DefaultBufferBytes, "e1")
	o := NewRecordOptions()
	o.BindAddress = freeAddress(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// No secure serving, authenticator nor authorizer: none is used.
	cc := (&schedulerserverconfig.Config{}).Complete()
	if err := serveStream(ctx, o, &cc, stream.NewServer(buf, time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + o.BindAddress + stream.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("plain list: %s", resp.Status)
	}
}

// TestRemoteStreamNeedsSecurePort checks that --record-stream-allow-remote
// is refused when --secure-port=0 leaves no certificate nor authentication.
func TestRemoteStreamNeedsSecurePort(t *testing.T) {
	o := NewRecordOptions()
	o.BindAddress, o.AllowRemote = freeAddress(t), true
	cc := (&schedulerserverconfig.Config{}).Complete()
	err := serveStream(context.Background(), o, &cc, stream.NewServer(stream.NewBuffer(1, stream.DefaultBufferBytes, "e1"), time.Second))
	if err == nil || !strings.Contains(err.Error(), "--record-stream-allow-remote") || !strings.Contains(err.Error(), "--secure-port") {
		t.Errorf("got %v, want an error naming --record-stream-allow-remote and --secure-port", err)
	}
}

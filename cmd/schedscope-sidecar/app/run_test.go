package app

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/stream"
	"github.com/schedscope/schedscope/test/pgserver"
)

// fakeAPIServer answers TokenReviews (token "alice-token" is alice) and
// SubjectAccessReviews (alice may get pod shop/web, list nodes and get the
// path /metrics),
// and records the reviews it was asked.
type fakeAPIServer struct {
	mu   sync.Mutex
	sars []string
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if tr.Spec.Token == "alice-token" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(tr); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var desc string
		if ra := sar.Spec.ResourceAttributes; ra != nil {
			desc = fmt.Sprintf("%s %s group=%q version=%q %s %s/%s", sar.Spec.User, ra.Verb, ra.Group, ra.Version, ra.Resource, ra.Namespace, ra.Name)
		} else if nra := sar.Spec.NonResourceAttributes; nra != nil {
			desc = fmt.Sprintf("%s %s %s", sar.Spec.User, nra.Verb, nra.Path)
		}
		f.mu.Lock()
		f.sars = append(f.sars, desc)
		f.mu.Unlock()
		allowed := map[string]bool{
			`alice get group="" version="v1" pods shop/web`:               true,
			`alice list group="" version="v1" nodes /`:                    true,
			"alice get /metrics":                                          true,
			`alice get group="schedscope.io" version="v1alpha1" status /`: true,
		}[desc]
		sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(sar); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func (f *fakeAPIServer) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sars...)
}

// TestRun starts the sidecar as the command does, with delegated
// authentication and authorization against a fake apiserver, following a
// real record stream, and checks what a caller sees.
// TestRun runs the sidecar on each store: records arrive through the
// stream and are explained to callers the apiserver allows.
func TestRun(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testRun(t, nil) })
	t.Run("postgres", func(t *testing.T) {
		server, err := pgserver.Start(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { server.Close() })
		url, err := server.CreateDatabase(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		testRun(t, func(o *Options) { o.Store = url })
	})
}

// testRun runs a sidecar configured by configure; when configure names a
// shared store, it also runs two replicas that serve it without
// following, as the API's own Deployment does.
func testRun(t *testing.T, configure func(*Options)) {
	dir := t.TempDir()
	apiserver := &fakeAPIServer{}
	apiSrv := httptest.NewTLSServer(apiserver)
	t.Cleanup(apiSrv.Close)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: sidecar-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, apiSrv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}

	buf := stream.NewBuffer(100, stream.DefaultBufferBytes, "e1")
	for _, a := range []*record.Attempt{
		recordtest.MakeAttempt("shop", "web", "uid-web").
			Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", "tainted-node").
			Passed("n1").Scheduled("n1").Obj(),
		recordtest.MakeAttempt("shop", "db", "uid-db").Unschedulable("0/1 nodes are available").Obj(),
	} {
		if err := buf.Add(a, ""); err != nil {
			t.Fatal(err)
		}
	}
	streamSrv := httptest.NewServer(stream.NewServer(buf, time.Second))
	t.Cleanup(streamSrv.Close)

	ln := runSidecar(t, streamSrv.URL+stream.Path, dir, kubeconfig, configure)

	base := "https://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	getFrom := func(base, token, path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	get := func(token, path string) (int, string) { return getFrom(base, token, path) }
	// The record arrives through the stream.
	var code int
	var body string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		code, body = get("alice-token", "/apis/schedscope.io/v1alpha1/namespaces/shop/pods/web/explain?node=tainted-node")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("explain never answered 200: %d %s", code, body)
	}
	if !strings.Contains(body, "rejected at Filter by TaintToleration") {
		t.Errorf("explain of tainted-node: %s", body)
	}
	if configure != nil {
		for i := range 2 {
			replica := runSidecar(t, streamSrv.URL+stream.Path, t.TempDir(), kubeconfig, func(o *Options) {
				configure(o)
				// The records of 2026-01-02 are older than a week: a
				// replica that serves only leaves retention to the writer.
				o.Follow = false
				o.Retention.MaxAge = 7 * 24 * time.Hour
			})
			replicaBase := "https://" + replica.Addr().String()
			code, body := getFrom(replicaBase, "alice-token", "/apis/schedscope.io/v1alpha1/namespaces/shop/pods/web/explain?node=tainted-node")
			if code != http.StatusOK || !strings.Contains(body, "rejected at Filter by TaintToleration") {
				t.Errorf("serve-only replica %d: explain of tainted-node: %d %s", i, code, body)
			}
			// It follows nothing: no follower status, no record received.
			code, body = getFrom(replicaBase, "alice-token", "/apis/schedscope.io/v1alpha1/status")
			if code != http.StatusOK || strings.Contains(body, `"follower"`) || !strings.Contains(body, `"attempts":2`) {
				t.Errorf("serve-only replica %d: status %d %s; want the store's 2 attempts and no follower", i, code, body)
			}
			code, body = getFrom(replicaBase, "alice-token", "/metrics")
			if code != http.StatusOK || !strings.Contains(body, "schedscope_follower_records_received_total 0") {
				t.Errorf("serve-only replica %d: metrics %d, want schedscope_follower_records_received_total 0", i, code)
			}
		}
	}

	tests := []struct {
		name, token, path string
		wantCode          int
		wantBody          string
	}{
		{name: "health needs nothing", path: "/healthz", wantCode: 200, wantBody: "ok"},
		{name: "the page needs nothing", path: "/", wantCode: 200, wantBody: "<title>schedscope</title>"},
		{name: "another pod is forbidden", token: "alice-token", path: "/apis/schedscope.io/v1alpha1/namespaces/shop/pods/db/explain", wantCode: 403},
		{name: "anonymous is unauthorized", path: "/apis/schedscope.io/v1alpha1/namespaces/shop/pods/web/explain", wantCode: 401},
		{name: "an unknown token is refused", token: "mallory-token", path: "/apis/schedscope.io/v1alpha1/namespaces/shop/pods/web/explain", wantCode: 401},
		{name: "metrics with the path permission", token: "alice-token", path: "/metrics", wantCode: 200, wantBody: "schedscope_follower_records_received_total 2"},
		{name: "metrics anonymous", path: "/metrics", wantCode: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(tt.token, tt.path)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("GET %s: %d %s; want %d with %q", tt.path, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	found := false
	for _, sar := range apiserver.asked() {
		if sar == `alice get group="" version="v1" pods shop/web` {
			found = true
		}
	}
	if !found {
		t.Errorf("no SubjectAccessReview for alice to get pod shop/web; asked %q", apiserver.asked())
	}
}

// TestRunFollowsAuthenticatedStream runs the sidecar on a record stream
// served over TLS to callers with a token, as --record-stream-allow-remote
// serves it: the sidecar verifies the stream's certificate with
// --stream-ca-file and sends the token of --stream-token-file, read again
// when it reconnects.
func TestRunFollowsAuthenticatedStream(t *testing.T) {
	dir := t.TempDir()
	apiSrv := httptest.NewTLSServer(&fakeAPIServer{})
	t.Cleanup(apiSrv.Close)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: sidecar-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, apiSrv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}

	buf := stream.NewBuffer(100, stream.DefaultBufferBytes, "e1")
	if err := buf.Add(recordtest.MakeAttempt("shop", "web", "uid-web").Scheduled("n1").Obj(), ""); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tokens []string
	streamServer := stream.NewServer(buf, 100*time.Millisecond)
	streamSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		tokens = append(tokens, auth)
		mu.Unlock()
		if auth != "Bearer stream-token" && auth != "Bearer rotated-token" {
			http.Error(w, `{"message":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		streamServer.ServeHTTP(w, r)
	}))
	t.Cleanup(streamSrv.Close)
	caFile, tokenFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: streamSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("stream-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	ln := runSidecar(t, streamSrv.URL+stream.Path, dir, kubeconfig, func(o *Options) {
		o.StreamTokenFile, o.StreamCAFile = tokenFile, caFile
	})

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	metrics := func() string {
		req, _ := http.NewRequest(http.MethodGet, "https://"+ln.Addr().String()+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer alice-token")
		resp, err := client.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	var body string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		body = metrics()
		return strings.Contains(body, "schedscope_follower_records_received_total 1"), nil
	})
	if err != nil {
		t.Fatalf("the record never arrived through the authenticated stream: %s", body)
	}

	// A rotated token is read when the follower reconnects.
	if err := os.WriteFile(tokenFile, []byte("rotated-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	streamSrv.CloseClientConnections()
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(tokens) > 0 && tokens[len(tokens)-1] == "Bearer rotated-token", nil
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		t.Errorf("the follower did not reconnect with the rotated token; it sent %q", tokens)
	}
	for _, tok := range tokens {
		if tok != "Bearer stream-token" && tok != "Bearer rotated-token" {
			t.Errorf("the follower sent %q, want the token of its file", tok)
		}
	}
}

// runSidecar runs the sidecar following streamURL into dir, authenticating
// and authorizing through kubeconfig's apiserver, until the test ends, and
// returns its listener. configure, if set, changes the options first.
func runSidecar(t *testing.T, streamURL, dir, kubeconfig string, configure func(*Options)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.StreamURL = streamURL
	o.Store = "sqlite://" + filepath.Join(dir, "records.db")
	o.SchedulerHealthURL, o.SchedulerReadyURL = "", ""
	o.ClusterHealth = false
	// The test records finished on 2026-01-02: keep them.
	o.Retention.MaxAge = 0
	o.SecureServing.Listener = ln
	o.SecureServing.BindPort = 0
	o.Authentication.RemoteKubeConfigFile = kubeconfig
	o.Authentication.SkipInClusterLookup = true
	o.Authorization.RemoteKubeConfigFile = kubeconfig
	if configure != nil {
		configure(o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return after its context ended")
		}
	})
	return ln
}

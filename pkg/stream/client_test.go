package stream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientTokenFile checks that a client with a token file sends the
// token it reads on each request, so a rotated token is used, and refuses
// to send one over plain HTTP or after a redirect.
func TestClientTokenFile(t *testing.T) {
	b := NewBuffer(10, DefaultBufferBytes, "epoch-1")
	add(t, b, "a")
	var mu sync.Mutex
	var seen []string
	streamServer := NewServer(b, time.Hour)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/elsewhere" {
			http.Redirect(w, r, "/v1/records", http.StatusFound)
			return
		}
		streamServer.ServeHTTP(w, r)
	}))
	defer srv.Close()

	tokenFile := filepath.Join(t.TempDir(), "token")
	write := func(token string) {
		t.Helper()
		if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("first\n")
	c, err := NewClient(srv.URL+Path, srv.Client(), WithTokenFile(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	list := func() error {
		body, err := c.Open(context.Background(), Request{})
		if err != nil {
			return err
		}
		defer body.Close()
		_, err = DecodeList(body, func(string, Record) error { return nil })
		return err
	}
	if err := list(); err != nil {
		t.Fatal(err)
	}
	write("second")
	if err := list(); err != nil {
		t.Fatal(err)
	}
	write("")
	if err := list(); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty token file: got %v, want an error saying it is empty", err)
	}
	mu.Lock()
	got := strings.Join(seen, ",")
	mu.Unlock()
	if got != "Bearer first,Bearer second" {
		t.Errorf("the server saw %q, want each request with the token in the file then", got)
	}

	// A redirect is not followed: the token goes to the stream's URL only.
	write("third")
	redirected, err := NewClient(srv.URL+"/elsewhere", srv.Client(), WithTokenFile(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := redirected.Open(context.Background(), Request{}); err == nil || !strings.Contains(err.Error(), "302") {
		t.Errorf("redirect: got %v, want a 302 error", err)
	}
	mu.Lock()
	n := len(seen)
	mu.Unlock()
	if n != 3 {
		t.Errorf("the server got %d requests, want 3: the redirect was followed", n)
	}

	if _, err := NewClient("http://127.0.0.1:10262"+Path, nil, WithTokenFile(tokenFile)); err == nil || !strings.Contains(err.Error(), "https") {
		t.Errorf("token with http: got %v, want an error asking for https", err)
	}
	if _, err := NewClient("http://127.0.0.1:10262"+Path, nil, WithTokenFile("")); err != nil {
		t.Errorf("no token with http: %v", err)
	}
}

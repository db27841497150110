package app

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestUIAddressNeedsAcceptRemote: ui serves the kubeconfig's credentials
// on loopback only, unless --accept-remote.
func TestUIAddressNeedsAcceptRemote(t *testing.T) {
	tests := []struct {
		address      string
		acceptRemote bool
		wantRefused  bool
	}{
		{address: "127.0.0.1"},
		{address: "127.0.0.2"},
		{address: "::1"},
		{address: "localhost"},
		{address: "0.0.0.0", wantRefused: true},
		{address: "::", wantRefused: true},
		{address: "", wantRefused: true},
		{address: "192.168.1.10", wantRefused: true},
		{address: "host.example", wantRefused: true},
		{address: "0.0.0.0", acceptRemote: true},
		{address: "192.168.1.10", acceptRemote: true},
	}
	for _, tt := range tests {
		u := &uiOptions{address: tt.address, acceptRemote: tt.acceptRemote}
		err := u.validate()
		if got := err != nil; got != tt.wantRefused {
			t.Errorf("--address %q --accept-remote=%v: %v; refused %v, want %v", tt.address, tt.acceptRemote, err, got, tt.wantRefused)
		}
	}

	code, _, errOut := run(t, "ui", "--address", "0.0.0.0", "--port", "0", "--kubeconfig", kubeconfig(t, "https://apiserver.invalid", "alice", "shop"))
	if code == ExitOK || !strings.Contains(errOut, `--address "0.0.0.0" is not a loopback address`) || !strings.Contains(errOut, "--accept-remote") {
		t.Errorf("ui --address 0.0.0.0: exit code %d, stderr %q; want an error naming the address and --accept-remote", code, errOut)
	}
}

// TestUIAcceptRemote: with --accept-remote, ui serves on every interface
// and still answers only the Host headers --accept-hosts accepts.
func TestUIAcceptRemote(t *testing.T) {
	apiserver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "from the kube-apiserver")
	}))
	defer apiserver.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, genericiooptions.IOStreams{In: strings.NewReader(""), Out: outW, ErrOut: io.Discard},
			[]string{"ui", "--address", "0.0.0.0", "--port", "0", "--accept-remote", "--accept-hosts", `^page\.example$`,
				"--kubeconfig", kubeconfig(t, apiserver.URL, "alice", "shop")})
		_ = outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("ui printed %q: %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	m := regexp.MustCompile(`http://\S+:(\d+)/`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("ui printed %q, want the page's address", line)
	}
	for host, want := range map[string]int{"localhost": http.StatusForbidden, "page.example": http.StatusOK} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+m[1]+"/apis/schedscope.io/v1alpha1/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: status %d, want %d", host, resp.StatusCode, want)
		}
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("ui exited with %d after the interrupt, want %d", code, ExitOK)
	}
}

// Package webtest loads the sidecar's web page in a real headless Chromium
// for tests: the rendered DOM, the row of a node in the matrix, and
// screenshots.
package webtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium finds the browser; the test fails, not skips, without it.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found on PATH: the browser test needs headless Chromium (Debian: apt-get install -y chromium)")
	return ""
}

func chromiumArgs(t testing.TB) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
		// Let the page's fetches finish before the DOM is dumped.
		"--virtual-time-budget=15000", "--window-size=1400,1800",
	}
}

// run runs headless Chromium with args and returns what it printed.
func run(t testing.TB, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium(t), append(chromiumArgs(t), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// DumpDOM loads url and returns the rendered DOM once the page says it
// is ready.
func DumpDOM(t testing.TB, url string) string {
	t.Helper()
	dom := string(run(t, "--dump-dom", url))
	if !strings.Contains(dom, `data-ready="true"`) {
		t.Fatalf("the page did not finish rendering:\n%s", dom)
	}
	return dom
}

// Screenshot saves a PNG of url as name in the test's artifact directory,
// fails the test if none was written, and returns its path.
func Screenshot(t *testing.T, url, name string) string {
	t.Helper()
	path := filepath.Join(t.ArtifactDir(), name)
	run(t, "--screenshot="+path, url)
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", path, err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// Row returns the matrix row (<tr>) of node in the DOM.
func Row(t testing.TB, dom, node string) string {
	t.Helper()
	re := regexp.MustCompile(`<tr[^>]*data-node="` + regexp.QuoteMeta(node) + `"[^>]*>.*?</tr>`)
	m := re.FindString(dom)
	if m == "" {
		t.Fatalf("no row for node %s in the DOM:\n%s", node, dom)
	}
	return m
}

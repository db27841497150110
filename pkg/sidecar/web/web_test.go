package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHeaders checks that the page may not be framed and that no answer's
// type is sniffed.
func TestHeaders(t *testing.T) {
	h := Handler(Config{})
	for _, path := range []string{"/", "/app.js", "/config.json"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d", path, rec.Code)
		}
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", path, got)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); path != "/config.json" && !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q does not forbid framing", path, csp)
		}
	}
}

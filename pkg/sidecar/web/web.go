// Package web serves the sidecar's web page: plain HTML and JavaScript,
// embedded in the binary, that reads the explain API from the browser.
package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Config configures the page.
type Config struct {
	// TraceURLTemplate links a trace, {traceID} standing for its ID;
	// empty hides trace links.
	TraceURLTemplate string `json:"traceURLTemplate"`
}

// Handler serves the page and its assets at /, and the page's configuration
// at /config.json. Nothing here is sensitive: the data comes from the API,
// which authorizes each request.
func Handler(cfg Config) http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	conf, _ := json.Marshal(cfg)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(conf)
	})
	mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	}))
	return mux
}

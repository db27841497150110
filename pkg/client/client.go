// Package client reads the explain API (pkg/apis/schedscope/v1alpha1),
// either through the kube-apiserver, which serves it as an aggregated API
// with the caller's own identity, or at the sidecar's own address.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// Client reads a path of the explain API.
type Client interface {
	Get(ctx context.Context, path string, query url.Values) ([]byte, error)
}

// Error is an error answer of the explain API itself (not of the
// kube-apiserver in front of it).
type Error struct {
	metav1.Status
}

func (e *Error) Error() string {
	return fmt.Sprintf("the sidecar answered %d %s: %s", e.Code, http.StatusText(int(e.Code)), e.Message)
}

// ErrPlainHTTPCredentials is returned by NewDirect for an http:// URL of a
// host that is not loopback when the config carries credentials.
var ErrPlainHTTPCredentials = errors.New("refusing to send the kubeconfig's credentials over plain http to a host that is not loopback; use https")

// answer turns a response into a body or an error. via names who answered.
func answer(code int, body []byte, via string) ([]byte, error) {
	if code >= 200 && code < 300 {
		return body, nil
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		return nil, fmt.Errorf("%s: %d %s", via, code, strings.TrimSpace(string(body)))
	}
	if st.Details != nil && st.Details.Group == v1alpha1.GroupName {
		return nil, &Error{Status: st}
	}
	// The kube-apiserver itself answered: the APIService, the sidecar
	// behind it or the caller's rights to the API group failed.
	return nil, fmt.Errorf("%s: %d %s", via, code, st.Message)
}

// direct reads the API at the sidecar's address.
type direct struct {
	base   *url.URL
	client *http.Client
}

// NewDirect returns a client of the sidecar at rawURL, authenticating as
// cfg does (cfg may be nil: no credentials).
func NewDirect(rawURL string, cfg *rest.Config) (Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q: want an http or https URL", rawURL)
	}
	if cfg == nil {
		return &direct{base: u, client: &http.Client{}}, nil
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) && hasCredentials(cfg) {
		return nil, fmt.Errorf("%q: %w", rawURL, ErrPlainHTTPCredentials)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Host = rawURL
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", rawURL, err)
	}
	return &direct{base: u, client: c}, nil
}

func (d *direct) Get(ctx context.Context, path string, query url.Values) ([]byte, error) {
	u := *d.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching the sidecar at %s: %w", d.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", u.String(), err)
	}
	return answer(resp.StatusCode, body, "the sidecar at "+d.base.String())
}

// isLoopback tells whether host names this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hasCredentials tells whether cfg authenticates its requests.
func hasCredentials(cfg *rest.Config) bool {
	return cfg.BearerToken != "" || cfg.BearerTokenFile != "" || cfg.Username != "" || cfg.Password != "" ||
		cfg.ExecProvider != nil || cfg.AuthProvider != nil || len(cfg.CertData) > 0 || cfg.CertFile != ""
}

// aggregated reads the API through the kube-apiserver, which proxies the
// API group to the sidecar and tells it who the caller is.
type aggregated struct {
	rest rest.Interface
	host string
}

// NewAggregated returns a client of the API through the kube-apiserver of cfg.
func NewAggregated(cfg *rest.Config) (Client, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &aggregated{rest: cs.CoreV1().RESTClient(), host: cfg.Host}, nil
}

func (a *aggregated) Get(ctx context.Context, path string, query url.Values) ([]byte, error) {
	req := a.rest.Get().AbsPath(path)
	for k, vs := range query {
		for _, v := range vs {
			req = req.Param(k, v)
		}
	}
	res := req.Do(ctx)
	var code int
	res.StatusCode(&code)
	body, err := res.Raw()
	if code == 0 {
		return nil, fmt.Errorf("reaching the kube-apiserver at %s: %w", a.host, err)
	}
	via := "the kube-apiserver at " + a.host
	if code == http.StatusNotFound || code == http.StatusServiceUnavailable {
		via += fmt.Sprintf(" (is the APIService %s.%s installed and available?)", v1alpha1.Version, v1alpha1.GroupName)
	}
	return answer(code, body, via)
}

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/schedscope/schedscope/pkg/sidecar/api"
)

// Client gets a path of the sidecar's API.
type Client interface {
	Get(ctx context.Context, path string, query url.Values) ([]byte, error)
}

// APIError is an error answer of the sidecar.
type APIError struct {
	Code    int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("the sidecar answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

type errorBody struct {
	Kind    string `json:"kind"`
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// answer turns a response into a body or an error.
func answer(code int, body []byte, via string) ([]byte, error) {
	if code >= 200 && code < 300 {
		return body, nil
	}
	var eb errorBody
	_ = json.Unmarshal(body, &eb)
	if eb.Kind == "Status" {
		// The kube-apiserver itself answered: the APIService, the sidecar
		// behind it or the caller's rights to the API group failed.
		return nil, fmt.Errorf("%s: %d %s", via, code, eb.Message)
	}
	msg := eb.Message
	if msg == "" {
		msg = strings.TrimSpace(string(body))
	}
	return nil, &APIError{Code: code, Message: msg}
}

// directClient talks to the sidecar at an address.
type directClient struct {
	base   *url.URL
	client *http.Client
}

func newDirectClient(server string, cfg *rest.Config) (*directClient, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("--server %q: want an http or https URL", server)
	}
	c := &http.Client{}
	if cfg != nil && u.Scheme == "http" && !isLoopback(u.Hostname()) && hasCredentials(cfg) {
		return nil, usageErrorf("--server %q: refusing to send the kubeconfig's credentials over plain http to a host that is not loopback; use https", server)
	}
	if cfg != nil {
		cfg = rest.CopyConfig(cfg)
		cfg.Host = server
		if c, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("--server %q: %w", server, err)
		}
	}
	return &directClient{base: u, client: c}, nil
}

func (d *directClient) Get(ctx context.Context, path string, query url.Values) ([]byte, error) {
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

// aggregatedClient reaches the sidecar's API through the kube-apiserver,
// which proxies the API group to the sidecar and tells it who the caller is.
type aggregatedClient struct {
	rest rest.Interface
	host string
}

func newAggregatedClient(cfg *rest.Config) (*aggregatedClient, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &aggregatedClient{rest: cs.CoreV1().RESTClient(), host: cfg.Host}, nil
}

func (a *aggregatedClient) Get(ctx context.Context, path string, query url.Values) ([]byte, error) {
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
		via += fmt.Sprintf(" (is the APIService %s.%s installed and available?)", api.Version, api.Group)
	}
	return answer(code, body, via)
}

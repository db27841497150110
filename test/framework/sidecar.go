package framework

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/freeport"
)

// Sidecar is a running schedscope-sidecar.
type Sidecar struct {
	*Process
	// URL is the sidecar's https base URL.
	URL string
	// CABundle is the CA certificate (PEM) that issued the sidecar's
	// serving certificate, which covers 127.0.0.1, localhost and the host
	// names of the Service its APIService names (RegisterAPIService).
	CABundle []byte
}

// StartSidecar starts schedscope-sidecar following sched's record stream
// into dir/name.db, serving a certificate of its own CA, authenticating
// and authorizing through the control plane, and waits until it answers
// /healthz. It listens on a free port unless extra sets --secure-port.
func (cp *ControlPlane) StartSidecar(ctx context.Context, name string, sched *Scheduler, extra ...string) (*Sidecar, error) {
	certDir := filepath.Join(cp.Dir, name+"-certs")
	ca, err := writeServingCert(certDir, sidecarHosts)
	if err != nil {
		return nil, fmt.Errorf("creating the serving certificate of %s: %w", name, err)
	}
	args := []string{
		"--stream-url", sched.StreamURL,
		"--store", "sqlite://" + filepath.Join(cp.Dir, name+".db"),
		"--bind-address", "127.0.0.1",
		"--tls-cert-file", filepath.Join(certDir, "tls.crt"), "--tls-private-key-file", filepath.Join(certDir, "tls.key"),
		"--kubeconfig", cp.Kubeconfig, "--authentication-kubeconfig", cp.Kubeconfig, "--authorization-kubeconfig", cp.Kubeconfig,
		"--scheduler-health-url", sched.HealthURL,
		"--scheduler-ready-url", strings.TrimSuffix(sched.HealthURL, "/healthz") + "/readyz",
	}
	port, ok := flagValue(extra, "--secure-port")
	if !ok {
		free, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		port = strconv.Itoa(free)
		args = append(args, "--secure-port", port)
	}
	args = append(args, extra...)
	s := &Sidecar{URL: "https://" + net.JoinHostPort("127.0.0.1", port), CABundle: ca}
	if s.Process, err = Start(cp.Dir, name, "schedscope-sidecar", args...); err != nil {
		return nil, err
	}
	if err := s.wait(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Sidecar) wait(ctx context.Context) error {
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return waitHTTP(ctx, s.Process, s.URL+"/healthz", insecure, 60*time.Second)
}

// Restart stops the sidecar if it still runs and starts it again on the
// same database, port and flags.
func (s *Sidecar) Restart(ctx context.Context) error {
	var err error
	if s.Process, err = s.Process.Restart(); err != nil {
		return err
	}
	return s.wait(ctx)
}

// SidecarStatus is the answer of the sidecar's status endpoint.
type SidecarStatus struct {
	Follower v1alpha1.FollowerStatus `json:"follower"`
	Store    v1alpha1.StoreStats     `json:"store"`
}

// Status reads the sidecar's status endpoint as the admin.
func (s *Sidecar) Status() (*SidecarStatus, error) {
	var st SidecarStatus
	return &st, s.getJSON(v1alpha1.Prefix+"status", &st)
}

// Pods lists the pods of namespace ns the sidecar holds records of, each
// with its latest attempt.
func (s *Sidecar) Pods(ns string) ([]v1alpha1.PodStatus, error) {
	var l v1alpha1.PodList
	return l.Items, s.getJSON(fmt.Sprintf("%snamespaces/%s/pods?limit=%d", v1alpha1.Prefix, ns, v1alpha1.MaxLimit), &l)
}

// Attempts lists the stored attempts of a pod, newest first.
func (s *Sidecar) Attempts(ns, name string) ([]v1alpha1.AttemptSummary, error) {
	var l v1alpha1.AttemptList
	return l.Items, s.getJSON(fmt.Sprintf("%snamespaces/%s/pods/%s/attempts?limit=%d", v1alpha1.Prefix, ns, name, v1alpha1.MaxLimit), &l)
}

func (s *Sidecar) getJSON(path string, v any) error {
	body, err := GetWithToken(s.URL + path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}

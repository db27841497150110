// Package framework is the harness the integration, end-to-end,
// reliability and benchmark tests and make run share: it starts real
// processes (etcd, kube-apiserver, schedulers, sidecars, OTLP receivers),
// each built from Go modules into the bin directory (SCHEDSCOPE_BIN,
// default <repo>/bin) and listening on loopback only, and creates and reads
// the objects and records they act on.
package framework

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/schedscope/schedscope/test/freeport"
)

// adminToken authenticates the tests and the schedulers as cluster admins.
const adminToken = "schedscope-admin-token"

// ViewerToken authenticates user "viewer", who has no rights until a test
// grants some with RBAC.
const ViewerToken = "schedscope-viewer-token"

// RepoRoot returns the directory of the main module.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// BinDir returns the directory holding etcd, kube-apiserver and the schedulers.
func BinDir() string {
	if d := os.Getenv("SCHEDSCOPE_BIN"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "bin")
}

// Binary returns the path of a built binary, or an error that says how to build it.
func Binary(name string) (string, error) {
	p := filepath.Join(BinDir(), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found in %s: run `make build` first: %w", name, BinDir(), err)
	}
	return p, nil
}

// Process is a started child process.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan error
	Log  string
	// binary and args start the process again (Restart).
	binary string
	args   []string
}

// Start runs a binary from BinDir with its output in logDir/name.log.
func Start(logDir, name, binary string, args ...string) (*Process, error) {
	return start(filepath.Join(logDir, name+".log"), os.O_TRUNC, name, binary, args)
}

// start runs binary with its output in logPath, opened with flag (O_TRUNC
// or O_APPEND) besides O_CREATE|O_WRONLY.
func start(logPath string, flag int, name, binary string, args []string) (*Process, error) {
	path, err := Binary(binary)
	if err != nil {
		return nil, err
	}
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|flag, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, done: make(chan error, 1), Log: logPath, binary: binary, args: args}
	go func() { p.done <- cmd.Wait(); out.Close() }()
	return p, nil
}

// Restart stops the process if it still runs and starts it again with the
// same binary and flags, its output appended to the same log.
func (p *Process) Restart() (*Process, error) {
	p.Stop()
	return start(p.Log, os.O_APPEND, p.Name, p.binary, p.args)
}

// Pid returns the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill ends the process (its whole process group) with SIGKILL, giving it
// no chance to clean up, and waits for it to be gone.
func (p *Process) Kill() {
	if p == nil || p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done //nolint:errcheck // killed: the exit status says only that
	p.done <- nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// Wait waits for the process to end and returns its error.
func (p *Process) Wait(timeout time.Duration) error {
	if p.Exited() {
		err := <-p.done
		p.done <- err
		return err
	}
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %s", p.Name, timeout)
	}
}

// Stop ends the process: SIGTERM, then SIGKILL after a grace period.
func (p *Process) Stop() {
	if p == nil || p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done: //nolint:errcheck // stopped: the exit status says only that
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done //nolint:errcheck // killed
	}
	p.done <- nil
}

// Tail returns the end of the process's log, for failure messages.
func (p *Process) Tail() string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	Etcd       *Process
	APIServer  *Process
	etcdURL    string
	apiArgs    []string
}

// StartControlPlane starts etcd and kube-apiserver in dir.
func StartControlPlane(ctx context.Context, dir string) (*ControlPlane, error) {
	cp := &ControlPlane{Dir: dir}
	if err := cp.startEtcd(); err != nil {
		return nil, err
	}
	if err := cp.startAPIServer(ctx); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) startEtcd() error {
	clientPort, err := freeport.Get()
	if err != nil {
		return err
	}
	peerPort, err := freeport.Get()
	if err != nil {
		return err
	}
	cp.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	cp.Etcd, err = Start(cp.Dir, "etcd", "etcd",
		"--data-dir", filepath.Join(cp.Dir, "etcd-data"),
		"--listen-client-urls", cp.etcdURL, "--advertise-client-urls", cp.etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", peerPort),
		"--quota-backend-bytes", "4294967296", "--unsafe-no-fsync")
	if err != nil {
		return err
	}
	return cp.waitEtcd(context.Background())
}

func (cp *ControlPlane) waitEtcd(ctx context.Context) error {
	return waitHTTP(ctx, cp.Etcd, cp.etcdURL+"/health", nil, 30*time.Second)
}

// StopEtcd stops etcd; StartEtcd starts it again.
func (cp *ControlPlane) StopEtcd() { cp.Etcd.Stop() }

// StartEtcd starts the etcd StopEtcd stopped, with the same data directory,
// ports and flags, and waits until it is healthy.
func (cp *ControlPlane) StartEtcd(ctx context.Context) error {
	var err error
	if cp.Etcd, err = cp.Etcd.Restart(); err != nil {
		return err
	}
	return cp.waitEtcd(ctx)
}

func (cp *ControlPlane) startAPIServer(ctx context.Context) error {
	if err := writeServiceAccountKey(cp.Dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cp.Dir, "tokens.csv"), []byte(adminToken+",admin,admin,system:masters\n"+ViewerToken+",viewer,viewer\n"), 0o600); err != nil {
		return err
	}
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	cp.apiArgs = []string{
		"--etcd-servers", cp.etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--cert-dir", filepath.Join(cp.Dir, "apiserver-certs"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", filepath.Join(cp.Dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(cp.Dir, "sa.key"),
		"--token-auth-file", filepath.Join(cp.Dir, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
		"--service-cluster-ip-range", "10.0.0.0/24",
		// Tolerations with the Gt and Lt operators are accepted, so that tests
		// can tell whether a scheduler's plugins got the same gate.
		"--feature-gates", "TaintTolerationComparisonOperators=true",
	}
	frontProxy, err := frontProxyArgs(cp.Dir)
	if err != nil {
		return err
	}
	cp.apiArgs = append(cp.apiArgs, frontProxy...)
	cp.APIServer, err = Start(cp.Dir, "kube-apiserver", "kube-apiserver", cp.apiArgs...)
	if err != nil {
		return err
	}
	host := fmt.Sprintf("https://127.0.0.1:%d", port)
	cp.Config = &rest.Config{Host: host, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 500, Burst: 1000}
	cp.Kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	if err := WriteKubeconfig(cp.Kubeconfig, host, adminToken); err != nil {
		return err
	}
	if err := cp.WaitAPIServer(ctx); err != nil {
		return err
	}
	cp.Client, err = kubernetes.NewForConfig(cp.Config)
	return err
}

// WaitAPIServer waits until kube-apiserver answers /readyz.
func (cp *ControlPlane) WaitAPIServer(ctx context.Context) error {
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return waitHTTP(ctx, cp.APIServer, cp.Config.Host+"/readyz", insecure, 60*time.Second)
}

// RestartAPIServer stops kube-apiserver and starts it again with the same
// flags, and waits until it is ready.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	var err error
	if cp.APIServer, err = cp.APIServer.Restart(); err != nil {
		return err
	}
	return cp.WaitAPIServer(ctx)
}

// Stop stops kube-apiserver and etcd.
func (cp *ControlPlane) Stop() {
	cp.APIServer.Stop()
	cp.Etcd.Stop()
}

// WriteKubeconfig writes a kubeconfig for host authenticating with token.
func WriteKubeconfig(path, host, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

func writeServiceAccountKey(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// waitHTTP polls url until it answers 200, failing early if p exits.
func waitHTTP(ctx context.Context, p *Process, url string, client *http.Client, timeout time.Duration) error {
	return waitHTTPEvery(ctx, p, url, client, 100*time.Millisecond, timeout)
}

// waitHTTPEvery is waitHTTP polling every interval.
func waitHTTPEvery(ctx context.Context, p *Process, url string, client *http.Client, interval, timeout time.Duration) error {
	if client == nil {
		client = http.DefaultClient
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited: %v\n%s", p.Name, p.Wait(0), p.Tail())
		}
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s at %s (last: %s): %w\n%s", p.Name, url, last, err, p.Tail())
	}
	return nil
}

// Scheduler is a running scheduler process.
type Scheduler struct {
	*Process
	// StreamURL is the record stream, for schedscope-scheduler.
	StreamURL string
	// HealthURL is the scheduler's /healthz on its secure port.
	HealthURL  string
	MetricsURL string
}

// observedSchedulers are the scheduler binaries built with schedscope, which
// serve a record stream: schedscope-scheduler and the example custom
// scheduler.
var observedSchedulers = map[string]bool{"schedscope-scheduler": true, "example-scheduler": true}

// StartScheduler starts binary (kube-scheduler, schedscope-scheduler, or
// the example custom scheduler with or without schedscope) with
// the KubeSchedulerConfiguration config (YAML, without clientConnection;
// the kubeconfig is set here) and extra flags.
func (cp *ControlPlane) StartScheduler(ctx context.Context, name, binary, config string, extra ...string) (*Scheduler, error) {
	cfgPath := filepath.Join(cp.Dir, name+"-config.yaml")
	config = strings.Replace(config, "kind: KubeSchedulerConfiguration\n",
		fmt.Sprintf("kind: KubeSchedulerConfiguration\nclientConnection:\n  kubeconfig: %s\n  qps: 500\n  burst: 1000\n", cp.Kubeconfig), 1)
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	port, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--config", cfgPath, "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--authentication-kubeconfig", cp.Kubeconfig, "--authorization-kubeconfig", cp.Kubeconfig,
		"--cert-dir", filepath.Join(cp.Dir, name+"-certs"),
	}
	s := &Scheduler{HealthURL: fmt.Sprintf("https://127.0.0.1:%d/healthz", port), MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", port)}
	if observedSchedulers[binary] && !hasFlag(extra, "--record-stream-address") {
		streamPort, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		args = append(args, "--record-stream-address", fmt.Sprintf("127.0.0.1:%d", streamPort))
	}
	args = append(args, extra...)
	if observedSchedulers[binary] {
		s.StreamURL = streamURL(args)
	}
	s.Process, err = Start(cp.Dir, name, binary, args...)
	if err != nil {
		return nil, err
	}
	if err := s.wait(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Scheduler) wait(ctx context.Context) error {
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return waitHTTP(ctx, s.Process, s.HealthURL, insecure, 60*time.Second)
}

// Restart stops the scheduler if it still runs and starts it again with
// the same configuration, ports and flags, as the kubelet restarts a
// container, and waits until it is healthy.
func (s *Scheduler) Restart(ctx context.Context) error {
	var err error
	if s.Process, err = s.Process.Restart(); err != nil {
		return err
	}
	return s.wait(ctx)
}

// streamURL is the record stream of a scheduler started with args, empty
// if it serves none: https when --record-stream-allow-remote serves it over
// TLS, and on 127.0.0.1 when it listens on every address.
func streamURL(args []string) string {
	addr, _ := flagValue(args, "--record-stream-address")
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if v, ok := flagValue(args, "--record-stream-allow-remote"); ok {
		if remote, err := strconv.ParseBool(v); err == nil && remote {
			scheme = "https"
		}
	}
	return fmt.Sprintf("%s://%s/v1/records", scheme, net.JoinHostPort(host, port))
}

// flagValue returns the last value of flag in args, given as --flag=value
// or --flag value; a flag followed by another flag or nothing is "true".
func flagValue(args []string, flag string) (value string, found bool) {
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, flag+"="):
			value, found = strings.TrimPrefix(a, flag+"="), true
		case a == flag:
			value, found = "true", true
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
			}
		}
	}
	return value, found
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// GetWithToken GETs url with the admin token, skipping TLS verification
// (the components serve self-signed certificates), and returns the body.
func GetWithToken(url string) ([]byte, error) {
	code, body, err := GetAs(url, adminToken)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET %s: %d: %s", url, code, body)
	}
	return body, err
}

// GetAs GETs url with a bearer token (none if empty), skipping TLS
// verification, and returns the status code and body.
func GetAs(url, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// SchedulerConfig is a KubeSchedulerConfiguration of the default profile
// under the scheduler name profile, without leader election: the scheduler
// runs alone. kube-scheduler runs it as it is; schedscope-scheduler wraps
// the same profile's plugins.
func SchedulerConfig(profile string) string {
	return "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: " + profile + "\n"
}

// BinpackProfile returns the one profile of config/scheduler-binpack.yaml,
// as YAML decodes it, and its schedulerName.
func BinpackProfile() (profile map[string]any, name string, err error) {
	path := filepath.Join(RepoRoot(), "config", "scheduler-binpack.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	profiles, _ := cfg["profiles"].([]any)
	if len(profiles) != 1 {
		return nil, "", fmt.Errorf("%s has %d profiles, want the bin-packing one alone", path, len(profiles))
	}
	profile, _ = profiles[0].(map[string]any)
	if name, _ = profile["schedulerName"].(string); name == "" {
		return nil, "", fmt.Errorf("%s: the profile has no schedulerName", path)
	}
	return profile, name, nil
}

// FastClient returns a client of cfg whose rate limit is far above what
// the tests' worker pools send: cp.Client's would pace their bursts.
func FastClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 10000
	return kubernetes.NewForConfig(cfg)
}

// WaitReady waits until the scheduler answers /readyz: its informers have
// synced and it schedules from then on.
func (s *Scheduler) WaitReady(ctx context.Context) error {
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return waitHTTPEvery(ctx, s.Process, strings.TrimSuffix(s.HealthURL, "/healthz")+"/readyz", insecure, 20*time.Millisecond, 5*time.Minute)
}

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/framework"
	"github.com/schedscope/schedscope/test/freeport"
)

// markerEnv is set in the environment of every process the stack starts
// (they inherit it), with the state directory as its value, so that the
// stack can find whatever of its processes is still running after it stops.
const markerEnv = "SCHEDSCOPE_LOCALSTACK_DIR"

// stack is the set of processes localstack runs, and where they listen.
type stack struct {
	o     options
	out   io.Writer
	root  string // the main module's directory
	dir   string // the state directory
	began time.Time

	cp      *framework.ControlPlane
	sched   *framework.Scheduler
	sidecar *framework.Sidecar
	jaeger  *framework.Process

	// jaegerQuery is Jaeger's query HTTP base URL when Jaeger runs.
	jaegerQuery, jaegerOTLP, jaegerHealth string
	// tracing is set when the scheduler exports traces to Jaeger; noTracing
	// says why it does not.
	tracing   bool
	noTracing string

	client *http.Client // for the loopback HTTPS endpoints (self-signed)
}

func newStack(o options, out io.Writer) (*stack, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	if os.Getenv("SCHEDSCOPE_BIN") == "" {
		if err := os.Setenv("SCHEDSCOPE_BIN", filepath.Join(root, "bin")); err != nil {
			return nil, err
		}
	}
	dir := o.stateDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "schedscope-localstack-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.Setenv(markerEnv, dir); err != nil {
		return nil, err
	}
	return &stack{
		o: o, out: out, root: root, dir: dir, began: time.Now(),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}},
	}, nil
}

// moduleRoot finds the schedscope module's directory above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.HasPrefix(data, []byte("module github.com/schedscope/schedscope\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run localstack inside the schedscope repository (no go.mod of github.com/schedscope/schedscope above the working directory)")
		}
		dir = parent
	}
}

// runAll starts the stack, runs the demo, then either runs the smoke checks
// or waits for a signal, and stops everything. It returns the exit code.
func (s *stack) runAll(ctx context.Context) int {
	mode := "demo"
	if s.o.smoke {
		mode = "smoke test"
	}
	fmt.Fprintf(s.out, "schedscope local stack (%s), state in %s\n", mode, s.dir)
	err := s.start(ctx)
	var d *demo
	if err == nil {
		d, err = s.runDemo(ctx)
	}
	if err == nil && s.o.smoke {
		err = s.smokeCheck(ctx, d)
	}
	if err == nil && !s.o.smoke {
		s.printWhereToLook()
		<-ctx.Done()
		fmt.Fprintln(s.out)
	}
	if ctx.Err() != nil && err != nil && errors.Is(err, context.Canceled) {
		err = nil // interrupted while starting: not a failure
	}
	stopErr := s.stop()
	if err == nil {
		err = stopErr
	}
	if err != nil {
		fmt.Fprintf(s.out, "\nFAILED: %v\n\nlogs kept in %s\n", err, s.dir)
		return 1
	}
	if s.o.smoke {
		fmt.Fprintf(s.out, "smoke test passed in %.1fs\n", time.Since(s.began).Seconds())
	}
	if s.o.keepState {
		fmt.Fprintf(s.out, "state kept in %s\n", s.dir)
	} else {
		_ = os.RemoveAll(s.dir)
	}
	return 0
}

// step prints that something is starting and returns a function that prints
// that it is done, with the time it took and the time since the start.
func (s *stack) step(what string) func(detail string) {
	start := time.Now()
	fmt.Fprintf(s.out, "[%5.1fs] %s ...\n", time.Since(s.began).Seconds(), what)
	return func(detail string) {
		if detail != "" {
			detail = ": " + detail
		}
		fmt.Fprintf(s.out, "[%5.1fs] %s done in %.1fs%s\n", time.Since(s.began).Seconds(), what, time.Since(start).Seconds(), detail)
	}
}

// port returns preferred if it is free on 127.0.0.1 (and this is not a
// smoke test, which may run next to other tests), otherwise a free port.
func (s *stack) port(preferred int) (int, error) {
	if !s.o.smoke && preferred != 0 {
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(preferred))); err == nil {
			ln.Close()
			return preferred, nil
		}
	}
	return freeport.Get()
}

func (s *stack) start(ctx context.Context) error {
	// Jaeger starts first, in the background: it is ready long before the
	// kube-apiserver is.
	_, binErr := os.Stat(filepath.Join(framework.BinDir(), "jaeger"))
	_, configErr := os.Stat(filepath.Join(s.root, "tools", "jaeger", "config.yaml"))
	switch {
	case s.o.noJaeger:
		s.noTracing = "-no-jaeger"
	case binErr != nil:
		s.noTracing = "bin/jaeger is not built (`make jaeger`)"
	case configErr != nil:
		s.noTracing = "tools/jaeger/config.yaml is missing"
	default:
		if err := s.startJaeger(); err != nil {
			return err
		}
	}

	done := s.step("starting etcd and kube-apiserver")
	cp, err := framework.StartControlPlane(ctx, s.dir)
	if err != nil {
		return fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	s.cp = cp
	done(cp.Config.Host)

	if s.jaeger != nil {
		done := s.step("waiting for Jaeger")
		if err := s.waitOK(ctx, s.jaeger, s.jaegerHealth, 30*time.Second); err != nil {
			return err
		}
		done(s.jaegerQuery)
	}

	extra := []string{"--leader-elect=false", "--v=1", "--shadow-profile=" + shadowBinpack + "=" + profileDefault}
	if s.jaeger != nil {
		ok, err := schedulerHasFlag("--tracing-config-file")
		if err != nil {
			return err
		}
		if ok {
			path := filepath.Join(s.dir, "tracing.yaml")
			cfg := fmt.Sprintf("apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: %s\nsamplingRatePerMillion: 1000000\n", s.jaegerOTLP)
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				return err
			}
			extra = append(extra, "--tracing-config-file="+path)
			s.tracing = true
		} else {
			s.noTracing = "schedscope-scheduler has no --tracing-config-file flag yet"
		}
	}
	config, err := os.ReadFile(filepath.Join(s.root, "config", "scheduler-two-profiles.yaml"))
	if err != nil {
		return err
	}
	done = s.step("starting schedscope-scheduler (config/scheduler-two-profiles.yaml, " + shadowBinpack + " a shadow of " + profileDefault + ")")
	s.sched, err = cp.StartScheduler(ctx, "schedscope-scheduler", "schedscope-scheduler", string(config), extra...)
	if err != nil {
		return fmt.Errorf("starting schedscope-scheduler: %w", err)
	}
	detail := "tracing off (" + s.noTracing + ")"
	if s.tracing {
		detail = "tracing every attempt to " + s.jaegerOTLP
	}
	done(detail)

	done = s.step("starting schedscope-sidecar")
	if err := s.startSidecar(ctx); err != nil {
		return fmt.Errorf("starting schedscope-sidecar: %w", err)
	}
	done(s.sidecar.URL)

	done = s.step("registering the explain API with the kube-apiserver (APIService " + framework.APIServiceName + ")")
	if _, err := s.cp.RegisterAPIService(ctx, s.sidecar); err != nil {
		return err
	}
	done(s.cp.Config.Host + v1alpha1.Prefix)
	return nil
}

// startJaeger starts bin/jaeger with tools/jaeger/config.yaml on loopback
// ports; start waits for it to be healthy later.
func (s *stack) startJaeger() error {
	config, err := os.ReadFile(filepath.Join(s.root, "tools", "jaeger", "config.yaml"))
	if err != nil {
		return err
	}
	// A copy in the state directory: its path in Jaeger's command line ties
	// the process to this stack.
	configPath := filepath.Join(s.dir, "jaeger-config.yaml")
	if err := os.WriteFile(configPath, config, 0o644); err != nil {
		return err
	}
	ports := map[string]int{}
	for _, p := range []struct {
		env       string
		preferred int
	}{
		{"JAEGER_OTLP_GRPC_PORT", 4317}, {"JAEGER_OTLP_HTTP_PORT", 4318},
		{"JAEGER_QUERY_HTTP_PORT", 16686}, {"JAEGER_QUERY_GRPC_PORT", 16685}, {"JAEGER_HEALTH_PORT", 13133},
	} {
		port, err := s.port(p.preferred)
		if err != nil {
			return err
		}
		ports[p.env] = port
		// Jaeger inherits the environment; its configuration reads these.
		if err := os.Setenv(p.env, strconv.Itoa(port)); err != nil {
			return err
		}
	}
	if err := os.Setenv("JAEGER_LOG_LEVEL", "warn"); err != nil {
		return err
	}
	s.jaegerOTLP = fmt.Sprintf("127.0.0.1:%d", ports["JAEGER_OTLP_GRPC_PORT"])
	s.jaegerQuery = fmt.Sprintf("http://127.0.0.1:%d", ports["JAEGER_QUERY_HTTP_PORT"])
	s.jaegerHealth = fmt.Sprintf("http://127.0.0.1:%d/status", ports["JAEGER_HEALTH_PORT"])
	fmt.Fprintf(s.out, "[%5.1fs] starting Jaeger (bin/jaeger) ...\n", time.Since(s.began).Seconds())
	s.jaeger, err = framework.Start(s.dir, "jaeger", "jaeger", "--config", configPath)
	return err
}

// schedulerHasFlag reports whether schedscope-scheduler accepts flag.
func schedulerHasFlag(flag string) (bool, error) {
	bin, err := framework.Binary("schedscope-scheduler")
	if err != nil {
		return false, err
	}
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	return bytes.Contains(out, []byte(flag+" ")), nil
}

// startSidecar starts the sidecar as the tests do, on its usual port when
// that is free, linking to Jaeger when it runs.
func (s *stack) startSidecar(ctx context.Context) error {
	port, err := s.port(10263)
	if err != nil {
		return err
	}
	extra := []string{"--secure-port", strconv.Itoa(port)}
	if s.jaegerQuery != "" {
		extra = append(extra, "--jaeger-url", s.jaegerQuery)
	}
	s.sidecar, err = s.cp.StartSidecar(ctx, "schedscope-sidecar", s.sched, extra...)
	return err
}

// waitOK polls url until it answers 200, failing early if p exits.
func (s *stack) waitOK(ctx context.Context, p *framework.Process, url string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited: %v\n%s", p.Name, p.Wait(0), p.Tail())
		}
		resp, err := s.client.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = fmt.Sprintf("%s %s", resp.Status, bytes.TrimSpace(body))
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s at %s (last answer: %s): %w\n%s", p.Name, url, last, err, p.Tail())
	}
	return nil
}

// stop stops every process, newest first, and checks that none of them,
// nor anything they started, is left running.
func (s *stack) stop() error {
	done := s.step("stopping")
	s.client.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
	if s.sidecar != nil {
		s.sidecar.Stop()
	}
	if s.sched != nil {
		s.sched.Stop()
	}
	// Idle keep-alive connections would hold up Jaeger's shutdown.
	s.jaeger.Stop()
	if s.cp != nil {
		s.cp.Stop()
	}
	left := s.leftovers()
	if len(left) == 0 {
		done("no process left")
		return nil
	}
	for _, p := range left {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	var names []string
	for _, p := range left {
		names = append(names, fmt.Sprintf("%d (%s)", p.pid, p.cmd))
	}
	return fmt.Errorf("processes still running after stop (now killed): %s", strings.Join(names, ", "))
}

type process struct {
	pid int
	cmd string
}

// leftovers lists the running processes, other than this one, whose
// environment carries this stack's marker.
func (s *stack) leftovers() []process {
	return processesWithEnv(markerEnv + "=" + s.dir)
}

// processesWithEnv scans /proc for processes whose environment holds entry.
func processesWithEnv(entry string) []process {
	entries, _ := os.ReadDir("/proc")
	var found []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == entry {
				cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && isZombie(stat) {
					break
				}
				found = append(found, process{pid: pid, cmd: strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))})
				break
			}
		}
	}
	return found
}

// isZombie reports whether a /proc/PID/stat line is of an exited process
// not yet reaped.
func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

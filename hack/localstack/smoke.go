package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/framework"
)

// explanation is the part of the sidecar's explain answer the checks read.
type explanation struct {
	Result       string `json:"result"`
	SelectedNode string `json:"selectedNode"`
	TraceID      string `json:"traceID"`
	Message      string `json:"message"`
}

// smokeCheck checks what the demo should have produced beyond the pods'
// outcomes (runDemo checked those): an explanation of every demo pod in the
// sidecar; through the kube-apiserver, as the banner tells users, the
// explain API's discovery, the kubectl plugin's answer for the
// unschedulable pod and the web page `kubectl schedscope ui` serves; the
// sidecar's own page; both metrics endpoints, the scheduler's counting the
// bin-packing shadow's runs; and the unschedulable pod's trace in Jaeger.
func (s *stack) smokeCheck(ctx context.Context, d *demo) error {
	done := s.step("checking the sidecar's explanation of every demo pod")
	explained := map[string]explanation{}
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		missing = missing[:0]
		for _, dp := range d.pods {
			name := dp.pod.Name
			if _, ok := explained[name]; ok {
				continue
			}
			e, err := s.explain(name)
			if err != nil {
				missing = append(missing, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			want, node := "scheduled", d.outcomes[name]
			switch node {
			case "unschedulable":
				want, node = "unschedulable", ""
			case "preempted":
				node = "a-reserved" // where it ran before it was evicted
			}
			if e.Result != want || e.SelectedNode != node {
				missing = append(missing, fmt.Sprintf("%s: latest attempt %s on %q, want %s on %q", name, e.Result, e.SelectedNode, want, node))
				continue
			}
			explained[name] = e
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the sidecar does not explain every demo pod: %w:\n  %s", err, strings.Join(missing, "\n  "))
	}
	done(fmt.Sprintf("%d pods", len(explained)))

	groupVersion := strings.TrimSuffix(v1alpha1.Prefix, "/")
	done = s.step("checking `kubectl get --raw " + groupVersion + "`")
	out, code, err := s.kubectl(ctx, "get", "--raw", groupVersion)
	if err != nil {
		return err
	}
	if code != 0 || !strings.Contains(out, `"groupVersion":"`+v1alpha1.GroupName+"/"+v1alpha1.Version+`"`) {
		return fmt.Errorf("kubectl get --raw %s: exit code %d, output:\n%s", groupVersion, code, out)
	}
	done("the kube-apiserver serves the explain API")

	done = s.step("checking `kubectl schedscope explain pod/" + unschedulable + " -n " + demoNamespace + "`")
	out, code, err = s.kubectl(ctx, "schedscope", "explain", "pod/"+unschedulable, "-n", demoNamespace)
	if err != nil {
		return err
	}
	if code != 3 || !strings.Contains(out, "unschedulable") || !strings.Contains(out, "NodeResourcesFit") {
		return fmt.Errorf("kubectl schedscope explain pod/%s: exit code %d (want 3: not scheduled), output:\n%s", unschedulable, code, out)
	}
	done("exit code 3, rejected by NodeResourcesFit")

	done = s.step("checking `kubectl schedscope shadow --shadow " + shadowBinpack + " -A -o json`")
	out, code, err = s.kubectl(ctx, "schedscope", "shadow", "--shadow", shadowBinpack, "-A", "-o", "json")
	if err != nil {
		return err
	}
	var summary v1alpha1.ShadowSummary
	if code != 0 || json.Unmarshal([]byte(out), &summary) != nil {
		return fmt.Errorf("kubectl schedscope shadow --shadow %s -A -o json: exit code %d, output:\n%s", shadowBinpack, code, out)
	}
	// Every demo pod's first attempt has a shadow run, the unschedulable
	// one's outcome neither.
	if summary.Compared < int64(len(demoWorkload())) || summary.Neither < 1 || summary.Compared != summary.SameNode+summary.OtherNode+summary.OnlyLiveFits+summary.OnlyShadowFits+summary.Neither {
		return fmt.Errorf("kubectl schedscope shadow --shadow %s -A: %+v; want at least %d runs compared, one of them neither", shadowBinpack, summary, len(demoWorkload()))
	}
	done(fmt.Sprintf("%d runs compared: %d on the same node, %d on another", summary.Compared, summary.SameNode, summary.OtherNode))

	done = s.step("checking the web page through `kubectl schedscope ui`")
	pageURL, err := s.checkUI(ctx)
	if err != nil {
		return err
	}
	done(pageURL + " answers 200")

	done = s.step("checking the sidecar's own web page and the metrics endpoints")
	resp, err := s.client.Get(s.sidecar.URL + "/")
	if err != nil {
		return fmt.Errorf("the sidecar's web page: %w", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(bytes.ToLower(page), []byte("<html")) {
		return fmt.Errorf("the sidecar's web page %s/: %s", s.sidecar.URL, resp.Status)
	}
	for _, m := range []struct{ url, metric string }{
		{s.sched.MetricsURL, `schedscope_attempts_total{profile="schedscope",result="unschedulable"}`},
		// The shadow found no node for the unschedulable pod either.
		{s.sched.MetricsURL, `schedscope_shadow_attempts_total{outcome="neither",profile="schedscope",shadow="schedscope-binpack"}`},
		{s.sidecar.URL + "/metrics", "schedscope_follower_records_received_total"},
	} {
		body, err := framework.GetWithToken(m.url)
		if err != nil {
			return err
		}
		if !bytes.Contains(body, []byte(m.metric)) {
			return fmt.Errorf("%s has no %s", m.url, m.metric)
		}
	}
	done("")

	if !s.tracing {
		fmt.Fprintf(s.out, "[%5.1fs] not checking traces: %s\n", time.Since(s.began).Seconds(), s.noTracing)
		return nil
	}
	done = s.step("checking the trace of pod " + unschedulable + " in Jaeger")
	traceID := explained[unschedulable].TraceID
	if traceID == "" {
		return fmt.Errorf("the record of %s has no trace ID although the scheduler traces every attempt", unschedulable)
	}
	var spans int
	var last string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		spans, last = s.jaegerSpans(traceID)
		return spans > 0, nil
	})
	if err != nil {
		return fmt.Errorf("no trace %s in Jaeger at %s (last answer: %s): %w", traceID, s.jaegerQuery, last, err)
	}
	done(fmt.Sprintf("trace %s, %d spans", traceID, spans))
	return nil
}

// explain asks the sidecar for the latest attempt of a demo pod.
func (s *stack) explain(name string) (explanation, error) {
	var e explanation
	body, err := framework.GetWithToken(fmt.Sprintf("%s%snamespaces/%s/pods/%s/explain?limit=1", s.sidecar.URL, v1alpha1.Prefix, demoNamespace, name))
	if err != nil {
		return e, err
	}
	return e, json.Unmarshal(body, &e)
}

// kubectlCommand is kubectl as the banner tells users to run it: with the
// stack's kubeconfig and the bin directory, which holds the kubectl
// plugin, first on PATH.
func (s *stack) kubectlCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return nil, fmt.Errorf("the smoke test runs kubectl as users do (Debian: kubernetes-client, which hack/deps.sh installs): %w", err)
	}
	cmd := exec.CommandContext(ctx, kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.cp.Kubeconfig, "PATH="+framework.BinDir()+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd, nil
}

// kubectl runs kubectlCommand and returns its output and exit code.
func (s *stack) kubectl(ctx context.Context, args ...string) (string, int, error) {
	cmd, err := s.kubectlCommand(ctx, args...)
	if err != nil {
		return "", 0, err
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode(), nil
	}
	if err != nil {
		return string(out), 0, fmt.Errorf("running kubectl %s: %w", strings.Join(args, " "), err)
	}
	return string(out), 0, nil
}

// checkUI runs `kubectl schedscope ui` on a free port, GETs the page at
// the address it prints (the kube-apiserver proxies the request to the
// sidecar), checks that it answers 200 with the page, stops the command
// and returns the page's URL.
func (s *stack) checkUI(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd, err := s.kubectlCommand(ctx, "schedscope", "ui", "--port", "0")
	if err != nil {
		return "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("running kubectl schedscope ui: %w", err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	// "Serving the page at http://127.0.0.1:PORT/apis/.../ui/ with ..."
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("kubectl schedscope ui printed no address: %w\n%s", err, stderr.String())
	}
	var pageURL string
	for _, f := range strings.Fields(line) {
		if strings.HasPrefix(f, "http://") {
			pageURL = f
		}
	}
	if pageURL == "" {
		return "", fmt.Errorf("kubectl schedscope ui printed no address: %q", line)
	}
	resp, err := s.client.Get(pageURL)
	if err != nil {
		return "", fmt.Errorf("the page through kubectl schedscope ui: %w", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(bytes.ToLower(page), []byte("<html")) {
		return "", fmt.Errorf("the page through kubectl schedscope ui, %s: %s\n%s", pageURL, resp.Status, page)
	}
	return pageURL, nil
}

// jaegerSpans returns how many spans Jaeger holds for a trace, and its answer.
func (s *stack) jaegerSpans(traceID string) (int, string) {
	resp, err := s.client.Get(s.jaegerQuery + "/api/traces/" + traceID)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Sprintf("%s %s", resp.Status, bytes.TrimSpace(body))
	}
	var traces struct {
		Data []struct {
			Spans []json.RawMessage `json:"spans"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &traces); err != nil {
		return 0, err.Error()
	}
	n := 0
	for _, t := range traces.Data {
		n += len(t.Spans)
	}
	return n, resp.Status
}

// printWhereToLook prints how to use the running stack, as in a cluster
// (kubectl and its plugin through the kube-apiserver), and every endpoint.
func (s *stack) printWhereToLook() {
	token := s.cp.Config.BearerToken
	w := s.out
	fmt.Fprintf(w, "schedscope is running (started in %.1fs). The kube-apiserver serves the sidecar's\n", time.Since(s.began).Seconds())
	fmt.Fprintf(w, "explain API (APIService %s), as in a cluster. In another shell:\n\n", framework.APIServiceName)
	fmt.Fprintf(w, "  export KUBECONFIG=%s PATH=%s:$PATH\n\n", s.cp.Kubeconfig, framework.BinDir())
	commands := []struct{ command, what string }{
		{fmt.Sprintf("kubectl schedscope explain pod/%s -n %s", unschedulable, demoNamespace), "why is it pending?"},
		{"kubectl schedscope pending -n " + demoNamespace, "the pending pods and why"},
		{"kubectl schedscope shadow --shadow " + shadowBinpack + " -A", "where the bin-packing shadow would have put the pods"},
		{"kubectl schedscope ui", fmt.Sprintf("the web page, at http://127.0.0.1:8001%s", v1alpha1.UIPath)},
		{"kubectl get --raw " + strings.TrimSuffix(v1alpha1.Prefix, "/"), "the explain API's resources"},
		{"kubectl get pods -n " + demoNamespace + " -o wide", ""},
	}
	width := 0
	for _, c := range commands {
		width = max(width, len(c.command))
	}
	for _, c := range commands {
		if c.what != "" {
			c.command = fmt.Sprintf("%-*s # %s", width+2, c.command, c.what)
		}
		fmt.Fprintf(w, "  %s\n", c.command)
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		fmt.Fprintln(w, "\n  kubectl is not on PATH: install it (Debian: kubernetes-client), or run the plugin as kubectl-schedscope.")
	}
	fmt.Fprintf(w, "\nWhere everything listens:\n\n")
	fmt.Fprintf(w, "  kube-apiserver       %s\n", s.cp.Config.Host)
	fmt.Fprintf(w, "  sidecar              %s   (the Service behind the APIService)\n", s.sidecar.URL)
	fmt.Fprintf(w, "  record stream        curl -s %s   (add ?watch=true to follow)\n", s.sched.StreamURL)
	fmt.Fprintf(w, "  scheduler metrics    curl -sk -H 'Authorization: Bearer %s' %s\n", token, s.sched.MetricsURL)
	fmt.Fprintf(w, "  sidecar metrics      curl -sk -H 'Authorization: Bearer %s' %s/metrics\n", token, s.sidecar.URL)
	if s.jaegerQuery != "" {
		fmt.Fprintf(w, "  Jaeger API           %s/api/traces?service=schedscope-scheduler   (UI at %s when its assets are built in)\n", s.jaegerQuery, s.jaegerQuery)
	}
	if !s.tracing {
		fmt.Fprintf(w, "  traces               off: %s\n", s.noTracing)
	}
	fmt.Fprintf(w, "  logs                 %s/*.log\n\n", s.dir)
	fmt.Fprintln(w, "Press Ctrl-C to stop everything.")
}

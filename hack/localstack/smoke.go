package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

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
// sidecar, the kubectl plugin's answer for the unschedulable pod, both
// metrics endpoints, and the unschedulable pod's trace in Jaeger.
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

	done = s.step("checking `kubectl schedscope explain pod/" + unschedulable + "`")
	out, code, err := s.kubectlExplain(unschedulable)
	if err != nil {
		return err
	}
	if code != 3 || !strings.Contains(out, "unschedulable") || !strings.Contains(out, "NodeResourcesFit") {
		return fmt.Errorf("kubectl schedscope explain pod/%s: exit code %d (want 3: not scheduled), output:\n%s", unschedulable, code, out)
	}
	done("exit code 3, rejected by NodeResourcesFit")

	done = s.step("checking the web page and the metrics endpoints")
	resp, err := s.client.Get(s.sidecarURL + "/")
	if err != nil {
		return fmt.Errorf("the sidecar's web page: %w", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(bytes.ToLower(page), []byte("<html")) {
		return fmt.Errorf("the sidecar's web page %s/: %s", s.sidecarURL, resp.Status)
	}
	for _, m := range []struct{ url, metric string }{
		{s.sched.MetricsURL, `schedscope_attempts_total{profile="schedscope",result="unschedulable"}`},
		{s.sched.MetricsURL, `schedscope_attempts_total{profile="schedscope-binpack",result="scheduled"}`},
		{s.sidecarURL + "/metrics", "schedscope_follower_records_received_total"},
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
	body, err := framework.GetWithToken(fmt.Sprintf("%s/apis/schedscope.io/v1alpha1/namespaces/%s/pods/%s/explain?limit=1", s.sidecarURL, demoNamespace, name))
	if err != nil {
		return e, err
	}
	return e, json.Unmarshal(body, &e)
}

// kubectlExplain runs the kubectl plugin against the sidecar as a user would.
func (s *stack) kubectlExplain(pod string) (string, int, error) {
	bin, err := framework.Binary("kubectl-schedscope")
	if err != nil {
		return "", 0, err
	}
	cmd := exec.Command(bin, "explain", "pod/"+pod, "-n", demoNamespace, "--sidecar-url", s.sidecarURL, "--insecure-skip-tls-verify")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.cp.Kubeconfig)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode(), nil
	}
	if err != nil {
		return string(out), 0, fmt.Errorf("running %s: %w", bin, err)
	}
	return string(out), 0, nil
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

// printWhereToLook prints every endpoint of the running stack.
func (s *stack) printWhereToLook(d *demo) {
	token := s.cp.Config.BearerToken
	bin := filepath.Join(s.root, "bin")
	w := s.out
	fmt.Fprintf(w, "schedscope is running (started in %.1fs). Where to look:\n\n", time.Since(s.began).Seconds())
	fmt.Fprintf(w, "  sidecar web page     %s/   (paste the token %s in the page's token field)\n", s.sidecarURL, token)
	fmt.Fprintf(w, "  explain API          curl -sk -H 'Authorization: Bearer %s' %s/apis/schedscope.io/v1alpha1/namespaces/%s/pods/%s/explain\n", token, s.sidecarURL, demoNamespace, unschedulable)
	fmt.Fprintf(w, "  pending pods         curl -sk -H 'Authorization: Bearer %s' %s/apis/schedscope.io/v1alpha1/pending\n", token, s.sidecarURL)
	fmt.Fprintf(w, "  record stream        curl -s %s   (add ?watch=true to follow)\n", s.sched.StreamURL)
	fmt.Fprintf(w, "  scheduler metrics    curl -sk -H 'Authorization: Bearer %s' %s\n", token, s.sched.MetricsURL)
	fmt.Fprintf(w, "  sidecar metrics      curl -sk -H 'Authorization: Bearer %s' %s/metrics\n", token, s.sidecarURL)
	if s.jaegerQuery != "" {
		fmt.Fprintf(w, "  Jaeger API           %s/api/traces?service=schedscope-scheduler   (UI at %s when its assets are built in)\n", s.jaegerQuery, s.jaegerQuery)
	}
	if !s.tracing {
		fmt.Fprintf(w, "  traces               off: %s\n", s.noTracing)
	}
	fmt.Fprintf(w, "  kube-apiserver       %s   (KUBECONFIG=%s)\n", s.cp.Config.Host, s.cp.Kubeconfig)
	fmt.Fprintf(w, "  logs                 %s/*.log\n\n", s.dir)
	fmt.Fprintf(w, "Why is pod %s/%s pending?\n\n", demoNamespace, unschedulable)
	fmt.Fprintf(w, "  PATH=%s:$PATH KUBECONFIG=%s \\\n    kubectl schedscope explain pod/%s -n %s --sidecar-url %s --insecure-skip-tls-verify\n\n",
		bin, s.cp.Kubeconfig, unschedulable, demoNamespace, s.sidecarURL)
	fmt.Fprintf(w, "  KUBECONFIG=%s kubectl get pods -n %s -o wide\n\n", s.cp.Kubeconfig, demoNamespace)
	fmt.Fprintln(w, "Press Ctrl-C to stop everything.")
}

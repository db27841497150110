package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/schedscope/schedscope/test/framework"
)

// ruleGroups renders the chart as release schedscope with the values file
// and --set values given, and returns the PrometheusRule's groups.
func ruleGroups(t *testing.T, valuesFiles []string, set ...string) []any {
	t.Helper()
	out, err := framework.RenderRelease("schedscope", "schedscope", valuesFiles, set...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.DecodeYAML(out)
	if err != nil {
		t.Fatal(err)
	}
	return slice(find(t, objs, "PrometheusRule", "schedscope").Object, "spec", "groups")
}

// TestPrometheusRuleDefaults: with the default values, the PrometheusRule
// holds exactly the groups of files/schedscope.rules.yaml, the rule file
// promtool tests: the mixin's default configuration is the chart's, and
// the runbook links are those of the chart's appVersion.
func TestPrometheusRuleDefaults(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(framework.ChartDir(), "files", "schedscope.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(file.Groups, ruleGroups(t, nil, "prometheusRule.enabled=true")); diff != "" {
		t.Errorf("the PrometheusRule's groups differ from files/schedscope.rules.yaml (-rules file +PrometheusRule):\n%s", diff)
	}
}

// TestPrometheusRuleValues: the values' selectors, cluster label and
// runbooks replace the defaults in every rule, and promtool accepts the
// rules that result.
func TestPrometheusRuleValues(t *testing.T) {
	const (
		scheduler = `job="kube-system/schedscope", container="scheduler"`
		sidecar   = `job="kube-system/schedscope", container="sidecar"`
		runbooks  = "https://runbooks.example.com/schedscope.html"
	)
	values := filepath.Join(t.TempDir(), "values.yaml")
	data, err := yaml.Marshal(map[string]any{"prometheusRule": map[string]any{
		"enabled":           true,
		"schedulerSelector": scheduler,
		"sidecarSelector":   sidecar,
		"clusterLabel":      "k8s_cluster",
		"runbookURL":        runbooks,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(values, data, 0o600); err != nil {
		t.Fatal(err)
	}
	groups := ruleGroups(t, []string{values})

	var alerts []string
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rule := r.(map[string]any)
			name, _ := rule["alert"].(string)
			alerts = append(alerts, name)
			expr, _ := rule["expr"].(string)
			// Every series selector of the rule is one of the values'.
			for i, part := range strings.Split(expr, "{")[1:] {
				if !strings.HasPrefix(part, scheduler+"}") && !strings.HasPrefix(part, scheduler+",") &&
					!strings.HasPrefix(part, sidecar+"}") && !strings.HasPrefix(part, sidecar+",") {
					t.Errorf("%s: selector %d of %q is neither the scheduler's nor the sidecar's", name, i, expr)
				}
			}
			if rule["for"] == nil || rule["for"] == "" {
				t.Errorf("%s has no for", name)
			}
			annotations := rule["annotations"].(map[string]any)
			if got, want := annotations["runbook_url"], runbooks+"#"+strings.ToLower(name); got != want {
				t.Errorf("%s: runbook_url %v, want %s", name, got, want)
			}
			description, _ := annotations["description"].(string)
			if !strings.Contains(description, "{{ with $labels.k8s_cluster }}") {
				t.Errorf("%s: the description does not name the cluster label k8s_cluster: %s", name, description)
			}
			if text := expr + description + annotations["summary"].(string); strings.Contains(text, "@") || strings.Contains(text, "$labels.cluster ") {
				t.Errorf("%s: a placeholder or the default cluster label is left: %s", name, text)
			}
			if name == "SchedscopeSchedulerUnhealthy" && !strings.Contains(expr, "unless on (k8s_cluster, namespace, pod)") {
				t.Errorf("%s does not match the scheduler's target in the same cluster: %s", name, expr)
			}
		}
	}
	if len(alerts) != 8 {
		t.Errorf("alerts %v, want 8", alerts)
	}

	promtool, err := framework.Binary("promtool")
	if err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	data, err = yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rules, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}

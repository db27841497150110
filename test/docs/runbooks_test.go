package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schedscope/schedscope/test/framework"
)

// runbookPrefix is where the alerts' runbook_url points with the mixin's
// default configuration: docs/runbooks.md of the chart's appVersion.
const runbookPrefix = "https://github.com/schedscope/schedscope/blob/"

// TestRunbooksMatchAlerts: docs/runbooks.md has one section for each alert
// of charts/schedscope/files/schedscope.rules.yaml, and no other; each
// alert's runbook_url is the anchor of its section in docs/runbooks.md of
// the chart's appVersion.
func TestRunbooksMatchAlerts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(framework.ChartDir(), "files", "schedscope.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	chart, err := os.ReadFile(filepath.Join(framework.ChartDir(), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(chart, &meta); err != nil {
		t.Fatal(err)
	}

	var sections []string
	for _, m := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(readDoc(t, "docs/runbooks.md"), -1) {
		sections = append(sections, m[1])
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if !slices.Contains(sections, r.Alert) {
				t.Errorf("docs/runbooks.md has no section %s", r.Alert)
			}
			want := runbookPrefix + meta.AppVersion + "/docs/runbooks.md#" + strings.ToLower(r.Alert)
			if got := r.Annotations["runbook_url"]; got != want {
				t.Errorf("%s: runbook_url %s, want %s", r.Alert, got, want)
			}
		}
	}
	for _, s := range sections {
		if !slices.Contains(alerts, s) {
			t.Errorf("docs/runbooks.md has a section %s, which is no alert", s)
		}
	}
}

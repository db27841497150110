package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schedscope/schedscope/test/framework"
)

// TestDashboard checks that the Grafana dashboard only queries metrics that
// exist (names documented in docs/scheduler.md and docs/sidecar.md), each filtered
// by the cluster variable and by the scheduler's or the sidecar's job; that
// it has a cluster variable; and that its link variables are text boxes
// one can edit.
func TestDashboard(t *testing.T) {
	var dash struct {
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query string `json:"query"`
				Hide  int    `json:"hide"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, err := os.ReadFile(filepath.Join(framework.ChartDir(), "files", "schedscope-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	var documented string
	for _, doc := range []string{"docs/scheduler.md", "docs/sidecar.md"} {
		data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), doc))
		if err != nil {
			t.Fatal(err)
		}
		documented += string(data)
	}

	variables := map[string]string{}
	for _, v := range dash.Templating.List {
		variables[v.Name] = v.Type
		if v.Type == "constant" {
			t.Errorf("variable %s is a constant, which the dashboard cannot edit", v.Name)
		}
		if (v.Name == "sidecar_url" || v.Name == "trace_url") && (v.Query == "" || v.Hide != 0) {
			t.Errorf("link variable %s: default %q, hide %d; want a default, shown", v.Name, v.Query, v.Hide)
		}
	}
	for name, want := range map[string]string{"cluster": "query", "sidecar_url": "textbox", "trace_url": "textbox"} {
		if variables[name] != want {
			t.Errorf("variable %s is a %q, want a %s variable", name, variables[name], want)
		}
	}

	selectors := []string{`cluster="$cluster", job="schedscope-scheduler"`, `cluster="$cluster", job="schedscope-sidecar"`}
	if len(dash.Panels) == 0 {
		t.Fatal("no panels")
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			parts := strings.Split(target.Expr, "{")
			if len(parts) == 1 {
				t.Errorf("panel %q queries %s without a selector", p.Title, target.Expr)
			}
			for _, part := range parts[1:] {
				if !strings.HasPrefix(part, selectors[0]) && !strings.HasPrefix(part, selectors[1]) {
					t.Errorf("panel %q queries %s, a selector not filtered by the cluster variable and the scheduler's or the sidecar's job", p.Title, target.Expr)
				}
			}
			for _, word := range strings.FieldsFunc(target.Expr, func(r rune) bool {
				return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
			}) {
				if !strings.HasPrefix(word, "schedscope_") {
					continue
				}
				if !strings.Contains(target.Expr, word+"{") {
					t.Errorf("panel %q queries %s without a selector", p.Title, word)
				}
				name := word
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					name = strings.TrimSuffix(name, suffix)
				}
				if !strings.Contains(documented, "`"+name+"`") {
					t.Errorf("panel %q queries %s, which docs/scheduler.md and docs/sidecar.md do not document", p.Title, word)
				}
			}
		}
	}
}

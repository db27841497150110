package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schedscope/schedscope/hack/internal/generated"
)

// reportFile, under -out, holds the report: benchstat's tables and the
// summaries that follow them.
const reportFile = "benchstat.txt"

// resultsPart is the results of a run on the performance page.
var resultsPart = generated.Part{
	Begin: "<!-- written by make bench from _output/bench (make bench-doc rewrites it from there) -->",
	End:   "<!-- end of make bench's results -->",
}

// shadowPart is the results of a -shadow run on the shadow profiles' page.
var shadowPart = generated.Part{
	Begin: "<!-- written by make bench-shadow from _output/bench-shadow -->",
	End:   "<!-- end of make bench-shadow's results -->",
}

// part is the part of -doc the run's results replace.
func (o *options) part() generated.Part {
	if o.shadow {
		return shadowPart
	}
	return resultsPart
}

// writePage replaces part of the page doc by the results of the run whose
// output is in out.
func writePage(out, doc string, part generated.Part) error {
	env, err := readEnvironment(filepath.Join(out, environmentFile))
	if err != nil {
		return fmt.Errorf("the run's environment: %w", err)
	}
	report, err := os.ReadFile(filepath.Join(out, reportFile))
	if err != nil {
		return err
	}
	results, err := renderResults(env, string(report))
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(out, reportFile), err)
	}
	return part.Replace(doc, results)
}

// reportSection is a section of the report and the lines it printed.
type reportSection struct {
	section
	body string
}

// splitReport splits the report into its sections, each starting at the
// line that introduces it.
func splitReport(report string) []reportSection {
	titles := map[string]section{}
	for _, s := range append(slices.Clone(sections), shadowSections...) {
		titles[s.title] = s
	}
	var found []reportSection
	var body strings.Builder
	flush := func() {
		if len(found) > 0 {
			found[len(found)-1].body = strings.Trim(body.String(), "\n")
		}
		body.Reset()
	}
	for line := range strings.Lines(report) {
		if s, ok := titles[strings.TrimSuffix(line, "\n")]; ok {
			flush()
			found = append(found, reportSection{section: s})
			continue
		}
		body.WriteString(line)
	}
	flush()
	return found
}

// renderResults is the page's results: when and on what the run measured,
// then each section of its report, its lines as the report printed them.
func renderResults(env environment, report string) (string, error) {
	found := splitReport(report)
	if len(found) == 0 {
		return "", fmt.Errorf("none of the report's sections")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe run these results are from:\n\n")
	fmt.Fprintf(&b, "- ran from %s to %s (%s);\n", env.Began.Format("2006-01-02 15:04"), env.Finished.Format("2006-01-02 15:04 MST"), duration(env.Finished.Sub(env.Began)))
	fmt.Fprintf(&b, "- on %d cores (%s) and %.1f GiB of memory;\n", env.Cores, env.CPU, float64(env.MemoryBytes)/(1<<30))
	commit := env.Commit
	if env.Modified {
		commit += " with changes not committed"
	}
	fmt.Fprintf(&b, "- built with %s, Kubernetes %s, schedscope %s;\n", env.Go, env.Kubernetes, commit)
	workloads := "every workload"
	if env.Workload != "" {
		workloads = fmt.Sprintf("the workloads whose name contains %q", env.Workload)
	}
	fmt.Fprintf(&b, "- parts %s, %s, %d runs of each mode in one process and %d rounds in their own processes.\n",
		env.Parts, workloads, env.Count, env.ProcessCount)
	for _, s := range found {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n```text\n%s\n```\n", s.heading, markdownEscaper.Replace(s.title), s.body)
	}
	b.WriteString("\n")
	return b.String(), nil
}

// markdownEscaper keeps a title's angle brackets (/proc/<pid>/stat) from
// reading as HTML.
var markdownEscaper = strings.NewReplacer("<", "&lt;", ">", "&gt;")

// duration is d in hours and minutes.
func duration(d time.Duration) string {
	m := int(d.Round(time.Minute).Minutes())
	return fmt.Sprintf("%dh%02dm", m/60, m%60)
}

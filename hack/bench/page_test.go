package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testPage is a performance page with prose around its results.
const testPage = "# Performance\n\nHow to read the results.\n\n" +
	"<!-- written by make bench from _output/bench (make bench-doc rewrites it from there) -->\nold results\n<!-- end of make bench's results -->\n\n## After\n"

// TestWritePage writes the results of testdata/run, a run's environment
// and report, into a page: testdata/page.md.
func TestWritePage(t *testing.T) {
	page := filepath.Join(t.TempDir(), "performance.md")
	if err := os.WriteFile(page, []byte(testPage), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writePage("testdata/run", page, resultsPart); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/page.md")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
}

func TestWritePageWithoutARun(t *testing.T) {
	page := filepath.Join(t.TempDir(), "performance.md")
	if err := os.WriteFile(page, []byte(testPage), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writePage(t.TempDir(), page, resultsPart); err == nil {
		t.Error("writePage of an empty output directory: no error")
	}
	if got, _ := os.ReadFile(page); string(got) != testPage {
		t.Errorf("writePage of an empty output directory changed the page to:\n%s", got)
	}
}

// TestSplitReport: each section the report starts is found again, with the
// lines printed after it.
func TestSplitReport(t *testing.T) {
	var report strings.Builder
	var want []reportSection
	for i, s := range sections {
		s.start(&report)
		body := strings.Repeat("line\n", i+1)
		report.WriteString(body)
		want = append(want, reportSection{section: s, body: strings.TrimSuffix(body, "\n")})
	}
	got := splitReport(report.String())
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(reportSection{}, section{})); diff != "" {
		t.Errorf("splitReport (-want +got):\n%s", diff)
	}
}

// TestFixtureHasEverySection keeps testdata/run/benchstat.txt in step with
// the report's sections.
func TestFixtureHasEverySection(t *testing.T) {
	report, err := os.ReadFile("testdata/run/" + reportFile)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, s := range sections {
		want = append(want, s.heading)
	}
	for _, s := range splitReport(string(report)) {
		got = append(got, s.heading)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sections of testdata/run/%s (-want +got):\n%s", reportFile, diff)
	}
}

// TestPerformancePageHasResults: make bench can write docs/performance.md.
func TestPerformancePageHasResults(t *testing.T) {
	if err := resultsPart.Check("../../docs/performance.md"); err != nil {
		t.Error(err)
	}
}

func TestValidateDoc(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "performance.md")
	if err := os.WriteFile(page, []byte(testPage), 0o644); err != nil {
		t.Fatal(err)
	}
	noResults := filepath.Join(dir, "other.md")
	if err := os.WriteFile(noResults, []byte("# Other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		o       options
		wantErr string
	}{
		{"a smoke run writes no page", options{smoke: true, doc: page}, "-smoke with -doc"},
		{"report only needs a page", options{reportOnly: true}, "-report-only without -doc"},
		{"a page without results", options{reportOnly: true, doc: noResults}, "has no generated part"},
		{"report only on a page with results", options{reportOnly: true, doc: page}, ""},
		{"compare only without -shadow", options{compareOnly: true}, "-compare-only needs -shadow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.count, tt.o.processCount, tt.o.parts, tt.o.benchstat = 1, 1, "perf", "no-such-benchstat"
			err := tt.o.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate: %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseCPUInfo(t *testing.T) {
	text := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n\n"
	cores, model := parseCPUInfo(text)
	if cores != 2 || model != "AMD EPYC 7B13" {
		t.Errorf("parseCPUInfo: %d cores, %q; want 2, %q", cores, model, "AMD EPYC 7B13")
	}
	if cores, model := parseCPUInfo("processor\t: 0\nBogoMIPS\t: 50.00\n"); cores != 1 || model != "unknown" {
		t.Errorf("parseCPUInfo without a model name: %d cores, %q; want 1, unknown", cores, model)
	}
}

func TestParseMemTotal(t *testing.T) {
	got, err := parseMemTotal("MemTotal:       24683772 kB\nMemFree:         2994320 kB\n")
	if err != nil || got != 24683772<<10 {
		t.Errorf("parseMemTotal: %d, %v; want %d", got, err, 24683772<<10)
	}
	if _, err := parseMemTotal("MemFree:         2994320 kB\n"); err == nil {
		t.Error("parseMemTotal without MemTotal: no error")
	}
}

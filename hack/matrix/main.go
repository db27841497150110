// Command matrix writes schedscope's compatibility matrix from what the
// tests of each Kubernetes minor ran: for each minor, the go test -json
// events of its test set (make test-minor), the versions its binaries
// print and the rows of its compatibility suite's table. With -update it
// replaces the matrix between the markers of each named file.
//
//	go run ./hack/matrix -dir _output/matrix -update README.md,docs/upgrade.md
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schedscope/schedscope/hack/internal/generated"
)

// matrixPart is the matrix in a file, between its markers.
var matrixPart = generated.Part{
	Begin: "<!-- compatibility matrix: written by make matrix -->",
	End:   "<!-- end of compatibility matrix -->",
}

// checks are the matrix's test columns: a column passes when each of its
// tests passed.
var checks = []struct {
	column string
	tests  []string
}{
	{"decision equivalence", []string{"TestDecisionEquivalence", "TestFeatureGatesReachPlugins"}},
	{"plugin shapes", []string{"TestObservedFrameworkEqualsPlain"}},
	{"drop-in parity", []string{"TestDropInParity"}},
	{"framework fields", []string{"TestEveryPluginListIsKnown", "TestObservedProfileEnablesTheSamePlugins", "TestObservePluginsRefusesAnotherFramework"}},
}

func main() {
	dir := flag.String("dir", "_output/matrix", "directory with a subdirectory per minor: test.json, versions.txt, compat.md")
	update := flag.String("update", "", "comma-separated files whose matrix (between the markers) to replace")
	flag.Parse()
	table, err := matrix(*dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(table)
	for _, file := range strings.Split(*update, ",") {
		if file == "" {
			continue
		}
		if err := matrixPart.Replace(file, table); err != nil {
			log.Fatal(err)
		}
	}
}

// matrix renders the table of every minor found under dir.
func matrix(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| minor | built with | kube-apiserver tested |")
	for _, c := range checks {
		b.WriteString(" " + c.column + " |")
	}
	b.WriteString(" compatibility suite (workload files passed) | records written = read |\n|---|---|---|")
	b.WriteString(strings.Repeat("---|", len(checks)+2) + "\n")
	minors := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		row, err := minorRow(filepath.Join(dir, e.Name()), e.Name())
		if err != nil {
			return "", fmt.Errorf("minor %s: %w", e.Name(), err)
		}
		b.WriteString(row)
		minors++
	}
	if minors == 0 {
		return "", fmt.Errorf("no minor's results under %s: run make test-minors", dir)
	}
	return b.String(), nil
}

// minorRow is one minor's row.
func minorRow(dir, minor string) (string, error) {
	results, err := testResults(filepath.Join(dir, "test.json"))
	if err != nil {
		return "", err
	}
	versions, err := os.ReadFile(filepath.Join(dir, "versions.txt"))
	if err != nil {
		return "", err
	}
	release, apiserver := versionsOf(string(versions))
	cells := []string{minor, release, apiserver}
	for _, c := range checks {
		cells = append(cells, checkCell(results, c.tests))
	}
	compat, records, err := compatCells(filepath.Join(dir, "compat.md"))
	if err != nil {
		return "", err
	}
	cells = append(cells, compat, records)
	return "| " + strings.Join(cells, " | ") + " |\n", nil
}

// testResults maps each top-level test in a go test -json stream to its
// last action: pass, fail or skip.
func testResults(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	results := map[string]string{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<24)
	for s.Scan() {
		var ev struct{ Action, Test string }
		if json.Unmarshal(s.Bytes(), &ev) != nil || ev.Test == "" || strings.Contains(ev.Test, "/") {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			results[ev.Test] = ev.Action
		}
	}
	return results, s.Err()
}

// checkCell is "pass" when every test passed, else the tests that did not
// and how.
func checkCell(results map[string]string, tests []string) string {
	var bad []string
	for _, t := range tests {
		switch results[t] {
		case "pass":
		case "":
			bad = append(bad, t+" not run")
		default:
			bad = append(bad, t+" "+results[t])
		}
	}
	if len(bad) == 0 {
		return "pass"
	}
	return "**" + strings.Join(bad, ", ") + "**"
}

// versionsOf reads versions.txt: the lines --version prints of the
// minor's schedscope-scheduler and kube-apiserver, which begin
// "Kubernetes vX.Y.Z".
func versionsOf(text string) (release, apiserver string) {
	release, apiserver = "?", "?"
	for line := range strings.Lines(text) {
		name, version, ok := strings.Cut(strings.TrimSpace(line), ": Kubernetes ")
		if !ok {
			continue
		}
		version, _, _ = strings.Cut(version, " ")
		switch name {
		case "schedscope-scheduler":
			release = version
		case "kube-apiserver":
			apiserver = version
		}
	}
	return release, apiserver
}

// compatCells summarizes the compatibility suite's rows per mode: files
// passed of files run, and the records written and read in observed modes.
func compatCells(path string) (files, records string, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "not run", "-", nil
	}
	if err != nil {
		return "", "", err
	}
	type tally struct {
		files, passed int
		written, read int64
	}
	tallies := map[string]*tally{}
	var modes []string
	for line := range strings.Lines(string(data)) {
		cols := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cols) != 6 {
			continue
		}
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		if cols[0] == "workload file" || strings.HasPrefix(cols[0], "---") {
			continue
		}
		mode := cols[1]
		t, ok := tallies[mode]
		if !ok {
			t = &tally{}
			tallies[mode] = t
			modes = append(modes, mode)
		}
		t.files++
		if cols[4] == "pass" {
			t.passed++
		}
		var w, r int64
		if n, _ := fmt.Sscanf(cols[5], "%d = %d", &w, &r); n == 2 {
			t.written += w
			t.read += r
		} else if n, _ := fmt.Sscanf(cols[5], "%d != %d", &w, &r); n == 2 {
			t.written += w
			t.read += r
		}
	}
	slices.Sort(modes)
	var fileCells, recordCells []string
	for _, mode := range modes {
		t := tallies[mode]
		fileCells = append(fileCells, fmt.Sprintf("%s %d/%d", mode, t.passed, t.files))
		if mode != "plain" {
			recordCells = append(recordCells, fmt.Sprintf("%s %d = %d", mode, t.written, t.read))
		}
	}
	files = strings.Join(fileCells, "; ")
	if files == "" {
		files = "not run"
	}
	records = strings.Join(recordCells, "; ")
	if records == "" {
		records = "-"
	}
	return files, records, nil
}

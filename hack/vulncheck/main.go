// Copyright 2026 The schedscope Authors.

// Command vulncheck gates on govulncheck's JSON output (read from stdin): it
// prints every vulnerability whose vulnerable symbol our code calls, and exits
// non-zero if any of them is not listed in the accept file with a reason.
// Vulnerabilities only imported or required, but not called, are counted and
// not gated on, as govulncheck itself does.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// message is one value of govulncheck's JSON stream; only the fields read here.
type message struct {
	OSV     *entry   `json:"osv,omitempty"`
	Finding *finding `json:"finding,omitempty"`
}

type entry struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

type finding struct {
	OSV          string  `json:"osv"`
	FixedVersion string  `json:"fixed_version"`
	Trace        []frame `json:"trace"`
}

type frame struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Package  string `json:"package"`
	Function string `json:"function"`
	Receiver string `json:"receiver"`
	Position *struct {
		Filename string `json:"filename"`
		Line     int    `json:"line"`
	} `json:"position"`
}

func main() {
	acceptPath := flag.String("accept", "", "file of accepted vulnerability IDs, one per line, each followed by the reason")
	flag.Parse()
	accepted, err := readAccepted(*acceptPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulncheck:", err)
		os.Exit(2)
	}
	called, notCalled, summaries, err := read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulncheck:", err)
		os.Exit(2)
	}

	ids := make([]string, 0, len(called))
	for id := range called {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	failed := 0
	for _, id := range ids {
		f := called[id]
		top := f.Trace[0]
		fixed := f.FixedVersion
		if fixed == "" {
			fixed = "none"
		}
		status := "NOT ACCEPTED"
		if reason, ok := accepted[id]; ok {
			status = "accepted: " + reason
		} else {
			failed++
		}
		fmt.Printf("%s %s@%s (fixed: %s): %s\n    %s\n    called: %s\n",
			id, top.Module, top.Version, fixed, summaries[id], status, caller(f.Trace))
	}
	fmt.Printf("vulncheck: %d vulnerabilities called (%d not accepted); %d more in imported packages or required modules, not called\n",
		len(called), failed, len(notCalled))
	for id := range accepted {
		if _, ok := called[id]; !ok {
			fmt.Printf("vulncheck: %s is accepted but no longer found: remove it from %s\n", id, *acceptPath)
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// read returns the findings that reach a vulnerable symbol (one per
// vulnerability), the IDs of those that do not, and each entry's summary.
func read(r io.Reader) (called map[string]finding, notCalled map[string]bool, summaries map[string]string, err error) {
	called, notCalled, summaries = map[string]finding{}, map[string]bool{}, map[string]string{}
	dec := json.NewDecoder(r)
	for {
		var m message
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, nil, fmt.Errorf("reading govulncheck -format json output: %w", err)
		}
		if m.OSV != nil {
			summaries[m.OSV.ID] = m.OSV.Summary
		}
		f := m.Finding
		if f == nil || len(f.Trace) == 0 {
			continue
		}
		if f.Trace[0].Function == "" {
			notCalled[f.OSV] = true
			continue
		}
		// Keep one example per vulnerability, the same on every run: the
		// shortest trace, then the first by its caller.
		if prev, ok := called[f.OSV]; !ok || len(f.Trace) < len(prev.Trace) ||
			len(f.Trace) == len(prev.Trace) && caller(f.Trace) < caller(prev.Trace) {
			called[f.OSV] = *f
		}
	}
	for id := range called {
		delete(notCalled, id)
	}
	return called, notCalled, summaries, nil
}

// caller names the frame in our code that the trace starts from.
func caller(trace []frame) string {
	f := trace[len(trace)-1]
	name := f.Function
	if f.Receiver != "" {
		name = f.Receiver + "." + name
	}
	s := f.Package + "." + name
	if f.Position != nil {
		s += fmt.Sprintf(" (%s:%d)", f.Position.Filename, f.Position.Line)
	}
	return s
}

func readAccepted(path string) (map[string]string, error) {
	accepted := map[string]string{}
	if path == "" {
		return accepted, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, _ := strings.Cut(line, " ")
		if reason = strings.TrimSpace(reason); reason == "" {
			return nil, fmt.Errorf("%s:%d: %s has no reason", path, n, id)
		}
		accepted[id] = reason
	}
	return accepted, sc.Err()
}

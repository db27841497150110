//go:build compat

package bench

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/dynamic-resource-allocation/structured"
)

var (
	compatModes     = flag.String("schedscope-compat-modes", "plain,recording", "comma-separated modes TestCompatibility runs each workload file in")
	compatWorkloads = flag.String("schedscope-compat-workloads", "", "regular expression over workload file paths (e.g. ^dra/); empty: every file")
	compatReport    = flag.String("schedscope-compat-report", "", "file to append the suite's table rows to")
)

// upstreamSetup is what upstream's own test of a workload file sets up
// around RunIntegrationPerfScheduling, mirrored here.
type upstreamSetup struct {
	// allocator is the DRA allocator the test enables; empty: the default.
	allocator string
	// hooks are the harness's hooks the test sets, where the minor's
	// harness has them.
	hooks   perfHooks
	timeout time.Duration
}

// upstreamSetups are the workload directories whose upstream test does more
// than RunIntegrationPerfScheduling(t, "performance-config.yaml"), besides
// those of one minor's files (nodedeclaredfeatures). Upstream runs dra/ once
// per allocator; this suite runs it with the default ones.
var upstreamSetups = map[string]upstreamSetup{
	"dra/compatibilitygroups": {allocator: "experimental"},
	"dra/listattributes":      {allocator: "experimental"},
	"podgroup/tas":            {timeout: 20 * time.Minute},
}

// TestCompatibility is schedscope's compatibility suite: every workload
// file of upstream's scheduler_perf, subdirectories included, runs at its
// integration-test sizes as upstream's own tests run it, in plain mode
// (kube-scheduler as it is) and in each observed mode of
// -schedscope-compat-modes. Upstream's harness fails a workload whose pods
// are not scheduled as its operations expect, or that leaves in-flight
// events behind; an observed mode must also record at least one attempt
// and have every record it wrote read back from the record stream.
func TestCompatibility(t *testing.T) {
	dir, err := schedulerPerfDir()
	if err != nil {
		t.Fatal(err)
	}
	files, err := workloadFiles(dir, *compatWorkloads)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no workload file under %s matches %q", dir, *compatWorkloads)
	}
	modes := strings.Split(*compatModes, ",")
	var table compatTable
	t.Cleanup(func() {
		t.Logf("compatibility suite:\n%s", table.String())
		if *compatReport != "" {
			if err := table.appendRows(*compatReport); err != nil {
				t.Error(err)
			}
		}
	})
	for _, file := range files {
		t.Run(filepath.Dir(file), func(t *testing.T) {
			for _, mode := range modes {
				t.Run(mode, func(t *testing.T) {
					row := runWorkloadFile(t, filepath.Join(dir, file), mode)
					table.add(filepath.Dir(file), mode, row, t)
				})
			}
		})
	}
}

// workloadFiles lists the workload files below dir whose path relative to
// dir matches filter, sorted.
func workloadFiles(dir, filter string) ([]string, error) {
	re, err := regexp.Compile(filter)
	if err != nil {
		return nil, fmt.Errorf("-schedscope-compat-workloads: %w", err)
	}
	var files []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "performance-config.yaml" {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err == nil && re.MatchString(rel) {
			files = append(files, rel)
		}
		return err
	})
	slices.Sort(files)
	return files, err
}

// compatRow is one workload file's run in one mode.
type compatRow struct {
	workloads, failed int
	records, read     int64
}

// runWorkloadFile runs the integration-test workloads of file in mode and
// reports how many ran and failed, and, observed, the records written and
// read.
func runWorkloadFile(t *testing.T, file, mode string) compatRow {
	setup := upstreamSetups[relativeTopic(file)]
	t.Chdir(filepath.Dir(file))
	if setup.allocator != "" {
		structured.EnableAllocators(setup.allocator)
		t.Cleanup(func() { structured.EnableAllocators() })
	}
	var o *observer
	res := &result{Mode: mode, Workload: file}
	switch mode {
	case "plain":
	case "recording", "tracing", "collector-down", "collector-slow":
		o = newObserver(t, res, mode)
	default:
		t.Fatalf("-schedscope-compat-modes: unknown mode %q", mode)
	}
	var row compatRow
	var mu sync.Mutex
	// started is called once per workload the label filter selects.
	started := func(tCtx tContext) {
		mu.Lock()
		row.workloads++
		mu.Unlock()
		tCtx.Cleanup(func() {
			if tCtx.Failed() {
				mu.Lock()
				row.failed++
				mu.Unlock()
			}
		})
	}
	runUpstream(t, setup, o, started)
	if o != nil {
		o.finish()
		row.records, row.read = res.Records, res.RecordsRead
		if res.Records == 0 || res.RecordsRead != res.Records {
			t.Errorf("recorded %d attempts, the stream reader read %d: want every attempt recorded and read", res.Records, res.RecordsRead)
		}
		if res.Dropped > 0 {
			t.Errorf("%d attempts dropped", res.Dropped)
		}
		if mode == "tracing" && res.SpansReceived == 0 {
			t.Error("the OTLP receiver received no span")
		}
	}
	return row
}

// relativeTopic is the directory of file below scheduler_perf.
func relativeTopic(file string) string {
	dir := filepath.Dir(file)
	i := strings.Index(dir, "scheduler_perf"+string(filepath.Separator))
	if i < 0 {
		return dir
	}
	return dir[i+len("scheduler_perf")+1:]
}

// compatTable collects the suite's results, one row per file and mode.
type compatTable struct {
	mu   sync.Mutex
	rows []string
}

func (c *compatTable) add(topic, mode string, row compatRow, t *testing.T) {
	outcome := "pass"
	if t.Failed() {
		outcome = "FAIL"
	}
	records := "-"
	if mode != "plain" {
		records = fmt.Sprintf("%d = %d", row.records, row.read)
		if row.records != row.read {
			records = fmt.Sprintf("%d != %d", row.records, row.read)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = append(c.rows, fmt.Sprintf("| %s | %s | %d | %d | %s | %s |", topic, mode, row.workloads, row.failed, outcome, records))
}

// compatHeader heads the suite's table.
const compatHeader = "| workload file | mode | workloads run | failed | result | records written = read |\n|---|---|---|---|---|---|\n"

func (c *compatTable) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return compatHeader + strings.Join(c.rows, "\n")
}

// appendRows appends the rows to the file at path.
func (c *compatTable) appendRows(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, strings.Join(c.rows, "\n"))
	return errors.Join(err, f.Close())
}

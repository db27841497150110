package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// environmentFile, under -out, is when and on what the run measured.
const environmentFile = "environment.json"

// environment is when a run measured, on what machine, and with which
// builds.
type environment struct {
	Began    time.Time `json:"began"`
	Finished time.Time `json:"finished"`
	// Cores and CPU are the processors /proc/cpuinfo lists and the model
	// name of the first.
	Cores int    `json:"cores"`
	CPU   string `json:"cpu"`
	// MemoryBytes is /proc/meminfo's MemTotal.
	MemoryBytes uint64 `json:"memoryBytes"`
	// Go is the toolchain the benchmarks were built with, Kubernetes the
	// k8s.io/kubernetes module's version.
	Go         string `json:"go"`
	Kubernetes string `json:"kubernetes"`
	// Commit is schedscope's commit; Modified, whether the work tree's
	// tracked files differed from it.
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"`
	// Parts, Workload, Count and ProcessCount are the run's -parts,
	// -workload, -count and -process-count.
	Parts        string `json:"parts"`
	Workload     string `json:"workload,omitempty"`
	Count        int    `json:"count"`
	ProcessCount int    `json:"processCount"`
}

// currentEnvironment is the environment of a run that began at began:
// the machine, the Go toolchain, the Kubernetes module's version and the
// commit of the work tree. Finished is for the run to set.
func currentEnvironment(ctx context.Context, began time.Time) (environment, error) {
	env := environment{Began: began.UTC()}
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return env, err
	}
	env.Cores, env.CPU = parseCPUInfo(string(cpuinfo))
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return env, err
	}
	if env.MemoryBytes, err = parseMemTotal(string(meminfo)); err != nil {
		return env, err
	}
	if env.Go, err = output(ctx, "go", "env", "GOVERSION"); err != nil {
		return env, err
	}
	if env.Kubernetes, err = output(ctx, "go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes"); err != nil {
		return env, err
	}
	if env.Commit, err = output(ctx, "git", "rev-parse", "HEAD"); err != nil {
		return env, err
	}
	status, err := output(ctx, "git", "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return env, err
	}
	env.Modified = status != ""
	return env, nil
}

// output is what the command prints on its standard output, trimmed.
func output(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// parseCPUInfo counts the processors in /proc/cpuinfo's text and returns
// the model name of the first ("unknown" where it has none).
func parseCPUInfo(text string) (cores int, model string) {
	model = "unknown"
	s := bufio.NewScanner(strings.NewReader(text))
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "processor":
			cores++
		case "model name":
			if cores == 1 {
				model = strings.TrimSpace(value)
			}
		}
	}
	return cores, model
}

// parseMemTotal reads MemTotal from /proc/meminfo's text, in bytes.
func parseMemTotal(text string) (uint64, error) {
	for line := range strings.Lines(text) {
		fields := strings.Fields(line)
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			kB, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %q: %w", strings.TrimSpace(line), err)
			}
			return kB << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemTotal in kB")
}

func writeEnvironment(path string, env environment) error {
	data, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func readEnvironment(path string) (environment, error) {
	var env environment
	data, err := os.ReadFile(path)
	if err != nil {
		return env, err
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return env, fmt.Errorf("%s: %w", path, err)
	}
	return env, nil
}

// Command kubemod writes the module file of one older Kubernetes minor,
// kube/<minor>.mod and its kube/<minor>.sum, from go.mod, which is the
// newest minor's: the same direct requirements with every Kubernetes module
// at that minor's release, the staging replacements of that release of
// k8s.io/kubernetes, and every other requirement as the minor's build of
// schedscope (build tag kube<minor>) needs it.
//
//	go run ./hack/kubemod -kubernetes v1.36.3
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

func main() {
	kubernetes := flag.String("kubernetes", "", "the release of k8s.io/kubernetes to build with, vMAJOR.MINOR.PATCH")
	flag.Parse()
	if err := run(*kubernetes); err != nil {
		log.Fatal(err)
	}
}

var releasePattern = regexp.MustCompile(`^v1\.(\d+)\.(\d+)$`)

func run(kubernetes string) error {
	m := releasePattern.FindStringSubmatch(kubernetes)
	if m == nil {
		return fmt.Errorf("-kubernetes %q: want a release of k8s.io/kubernetes such as v1.36.3", kubernetes)
	}
	minor := "1." + m[1]
	staging := "v0." + m[1] + "." + m[2]
	goMod, err := os.ReadFile("go.mod")
	if err != nil {
		return err
	}
	newest := regexp.MustCompile(`(?m)^\tk8s\.io/kubernetes (v1\.(\d+)\.(\d+))$`).FindSubmatch(goMod)
	if newest == nil {
		return fmt.Errorf("go.mod requires no release of k8s.io/kubernetes")
	}
	replaced, err := upstreamReplacements(kubernetes)
	if err != nil {
		return err
	}
	newestStaging := "v0." + string(newest[2]) + "." + string(newest[3])
	var out strings.Builder
	for block := range strings.SplitAfterSeq(string(goMod), "\n\n") {
		if strings.Contains(block, "// indirect") {
			continue // worked out anew below, as this release needs them
		}
		for line := range strings.Lines(block) {
			fields := strings.Fields(line)
			if len(fields) > 1 && fields[1] == "=>" && strings.HasPrefix(fields[0], "k8s.io/") && !replaced[fields[0]] {
				continue // a staging module this release does not have
			}
			if len(fields) == 2 && fields[0] == "k8s.io/utils" {
				continue // as this release of k8s.io/kubernetes needs it
			}
			line = strings.ReplaceAll(line, string(newest[1]), kubernetes)
			out.WriteString(strings.ReplaceAll(line, newestStaging, staging))
		}
	}
	// A module that requires schedscope's would otherwise get the newest
	// minor's k8s.io/kubernetes, which schedscope's go.mod requires.
	fmt.Fprintf(&out, "\n// This minor's release, whatever a dependency requires.\nreplace k8s.io/kubernetes => k8s.io/kubernetes %s\n", kubernetes)
	modFile := filepath.Join("kube", minor+".mod")
	if err := os.MkdirAll("kube", 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(modFile, []byte(out.String()), 0o644); err != nil {
		return err
	}
	// go list with -mod=mod adds what the minor's packages and tests need,
	// the compatibility suite's (build tag compat) included.
	list := exec.Command("go", "list", "-mod=mod", "-modfile="+modFile, "-tags=kube"+minor+",compat", "-deps", "-test", "./...", "tool")
	list.Stdout, list.Stderr = nil, os.Stderr
	if err := list.Run(); err != nil {
		return fmt.Errorf("completing %s: %w", modFile, err)
	}
	fmt.Println(modFile)
	return nil
}

// upstreamReplacements are the modules k8s.io/kubernetes at release
// replaces in its own go.mod: its staging modules.
func upstreamReplacements(release string) (map[string]bool, error) {
	out, err := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@"+release).Output()
	if err != nil {
		return nil, fmt.Errorf("downloading k8s.io/kubernetes@%s: %w", release, err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, err
	}
	f, err := os.Open(info.GoMod)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	replaced := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) > 1 && fields[1] == "=>" {
			replaced[fields[0]] = true
		}
	}
	return replaced, s.Err()
}

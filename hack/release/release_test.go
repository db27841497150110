package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// repoRoot is the main module's directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// tool returns bin/name, failing the test when it was not built.
func tool(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot(), "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: build it with make krew", err)
	}
	return p
}

// TestReleaseInstallsWithKrew builds the release of this machine's
// platform (the full matrix is make release's), checks the sums and has
// krew's own tools validate the manifest and install the plugin from the
// archive (the plugin, the LICENSE and the completion scripts), which
// must then report the stamped version; the caveats say what the cluster
// needs and where the completion scripts are; an archive that is not the
// one the manifest pins is refused.
func TestReleaseInstallsWithKrew(t *testing.T) {
	validate, krew := tool(t, "validate-krew-manifest"), tool(t, "krew")
	out := t.TempDir()
	const version = "v0.9.1-rc.1"
	platform := runtime.GOOS + "/" + runtime.GOARCH
	assets, err := Build(Options{Version: version, OutDir: out, Platforms: []string{platform}, URL: DefaultURL, ModuleDir: repoRoot()})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	archive := filepath.Join(out, "kubectl-schedscope_"+version+"_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	sumsFile := filepath.Join(out, "kubectl-schedscope_"+version+"_checksums.txt")
	manifestFile := filepath.Join(out, "schedscope.yaml")
	if diff := cmp.Diff([]string{archive, sumsFile, manifestFile}, assets); diff != "" {
		t.Fatalf("assets (-want +got):\n%s", diff)
	}

	sum, err := sha256File(archive)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(sumsFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := sum + "  " + filepath.Base(archive) + "\n"; string(sums) != want {
		t.Errorf("sums file %q, want %q", sums, want)
	}
	wantNames := []string{"kubectl-schedscope", "LICENSE", "kubectl_complete-schedscope", "completion/kubectl-schedscope.bash", "completion/kubectl-schedscope.zsh"}
	if diff := cmp.Diff(wantNames, archiveNames(t, archive)); diff != "" {
		t.Errorf("archive's files (-want +got):\n%s", diff)
	}
	var manifest plugin
	data, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &manifest); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	wantPlatform := platformSpec{
		Selector: manifest.Spec.Platforms[0].Selector, Sha256: sum, Bin: "kubectl-schedscope",
		Files: []fileOperation{{From: "kubectl-schedscope", To: "."}, {From: "LICENSE", To: "."}, {From: "kubectl_complete-schedscope", To: "."}, {From: "completion/*", To: "completion"}},
		URI:   "https://github.com/schedscope/schedscope/releases/download/" + version + "/" + filepath.Base(archive),
	}
	if diff := cmp.Diff([]platformSpec{wantPlatform}, manifest.Spec.Platforms); diff != "" {
		t.Errorf("manifest platforms (-want +got):\n%s", diff)
	}
	store := "${KREW_ROOT:-$HOME/.krew}/store/schedscope/" + version
	for _, want := range []string{"charts/schedscope", "docs/deploy.md", "spec.schedulerName",
		`ln -s "` + store + `/kubectl_complete-schedscope"`, `source "` + store + `/completion/kubectl-schedscope.bash"`} {
		if !strings.Contains(manifest.Spec.Caveats, want) {
			t.Errorf("caveats do not say %q:\n%s", want, manifest.Spec.Caveats)
		}
	}
	if got := manifest.Spec.Platforms[0].Selector.MatchLabels; got["os"] != runtime.GOOS || got["arch"] != runtime.GOARCH || len(got) != 2 {
		t.Errorf("selector %v, want os=%s arch=%s", got, runtime.GOOS, runtime.GOARCH)
	}

	validation, err := exec.Command(validate, "-manifest", manifestFile, "-skip-install").CombinedOutput()
	t.Logf("validate-krew-manifest:\n%s", validation)
	if err != nil {
		t.Fatalf("validate-krew-manifest: %v", err)
	}
	if !strings.Contains(string(validation), "structural validation OK") {
		t.Errorf("validate-krew-manifest did not report structural validation OK")
	}

	install := func(archive string) (string, string, error) {
		root := t.TempDir()
		cmd := exec.Command(krew, "install", "--manifest", manifestFile, "--archive", archive)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "KREW_ROOT=" + root, "KREW_OS=" + runtime.GOOS, "KREW_ARCH=" + runtime.GOARCH}
		output, err := cmd.CombinedOutput()
		return root, string(output), err
	}
	root, output, err := install(archive)
	t.Logf("krew install:\n%s", output)
	if err != nil {
		t.Fatalf("krew install: %v", err)
	}
	versionOut, err := exec.Command(filepath.Join(root, "bin", "kubectl-schedscope"), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("installed kubectl-schedscope --version: %v: %s", err, versionOut)
	}
	if want := "kubectl schedscope " + version + "\n"; string(versionOut) != want {
		t.Errorf("installed kubectl-schedscope --version = %q, want %q", versionOut, want)
	}

	installedLicense := readFile(t, filepath.Join(root, "store", "schedscope", version, "LICENSE"))
	if string(installedLicense) != string(readFile(t, filepath.Join(repoRoot(), "LICENSE"))) {
		t.Errorf("krew installed a LICENSE other than the repository's")
	}

	installed := filepath.Join(root, "store", "schedscope", version)
	for shell, want := range map[string]string{"bash": "# bash completion V2 for kubectl-schedscope", "zsh": "#compdef kubectl-schedscope"} {
		if script := readFile(t, filepath.Join(installed, "completion", "kubectl-schedscope."+shell)); !strings.HasPrefix(string(script), want) {
			t.Errorf("installed %s completion starts %.60q, want %q", shell, script, want)
		}
	}
	if complete := readFile(t, filepath.Join(installed, "kubectl_complete-schedscope")); !strings.Contains(string(complete), "exec kubectl-schedscope __complete") {
		t.Errorf("installed kubectl_complete-schedscope:\n%s", complete)
	}

	tampered := filepath.Join(t.TempDir(), filepath.Base(archive))
	if err := os.WriteFile(tampered, append(readFile(t, archive), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	_, output, err = install(tampered)
	t.Logf("krew install of another archive:\n%s", output)
	if err == nil || !strings.Contains(output, "checksum does not match, want: "+sum) {
		t.Errorf("krew installed an archive other than the pinned one (err %v)", err)
	}
}

// archiveNames lists the names of the files in a tar.gz, in order.
func archiveNames(t *testing.T, archive string) []string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestBuildRefusesBadInput: a version krew would refuse or a malformed
// platform is an error naming the flag, before anything is built.
func TestBuildRefusesBadInput(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      Options
		wantError string
	}{
		{name: "git describe of an untagged tree", opts: Options{Version: "12c9d3a-dirty", Platforms: DefaultPlatforms}, wantError: `-version "12c9d3a-dirty": want vMAJOR.MINOR.PATCH`},
		{name: "no v", opts: Options{Version: "0.2.0", Platforms: DefaultPlatforms}, wantError: `-version "0.2.0": want vMAJOR.MINOR.PATCH`},
		{name: "empty", opts: Options{Platforms: DefaultPlatforms}, wantError: `-version "": want vMAJOR.MINOR.PATCH`},
		{name: "platform without arch", opts: Options{Version: "v0.2.0", Platforms: []string{"linux/amd64", "linux"}}, wantError: `-platforms: "linux" is not GOOS/GOARCH`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.OutDir = t.TempDir()
			_, err := Build(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantError) {
				t.Fatalf("Build: error %v, want one containing %q", err, tt.wantError)
			}
			entries, _ := os.ReadDir(tt.opts.OutDir)
			if len(entries) != 0 {
				t.Errorf("Build wrote %d files", len(entries))
			}
		})
	}
}

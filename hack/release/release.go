package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/schedscope/schedscope/cmd/kubectl-schedscope/app"
)

const (
	// binary is the kubectl plugin's executable: kubectl runs it as
	// "kubectl schedscope".
	binary = "kubectl-schedscope"
	// license is the repository's license file, shipped in every archive.
	license = "LICENSE"
	// kubectlComplete is the script kubectl (1.26 and later) runs from the
	// PATH to complete "kubectl schedscope".
	kubectlComplete = "kubectl_complete-schedscope"
	// bashCompletion and zshCompletion are the plugin's completion
	// scripts of kubectl-schedscope run by itself, as its completion
	// command generates them.
	bashCompletion = "completion/kubectl-schedscope.bash"
	zshCompletion  = "completion/kubectl-schedscope.zsh"
	// homepage is the project's repository.
	homepage = "https://github.com/schedscope/schedscope"
	// pluginName is the plugin's name in krew, and its manifest's file
	// name without ".yaml".
	pluginName = "schedscope"
	// DefaultURL is where a release's assets are downloaded from.
	DefaultURL = "https://github.com/schedscope/schedscope/releases/download/{version}"
)

// archiveFile is a file of each archive: its name there and its mode.
type archiveFile struct {
	name string
	mode int64
}

// archiveFiles are the files of each archive, in order: the plugin, its
// license (which krew's index requires) and its completion scripts.
var archiveFiles = []archiveFile{
	{binary, 0o755}, {license, 0o644}, {kubectlComplete, 0o755}, {bashCompletion, 0o644}, {zshCompletion, 0o644},
}

// DefaultPlatforms are the GOOS/GOARCH pairs of a release.
var DefaultPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// Options say what to build.
type Options struct {
	// Version is the release's version, vMAJOR.MINOR.PATCH[-PRERELEASE].
	Version string
	// OutDir receives the assets.
	OutDir string
	// Platforms are GOOS/GOARCH pairs.
	Platforms []string
	// URL is the assets' directory, with {version} for the version.
	URL string
	// ModuleDir is the main module's directory; empty means the current one.
	ModuleDir string
}

// Build builds an archive for each platform, the sums file and the krew
// manifest into opts.OutDir and returns their paths, archives first.
func Build(opts Options) ([]string, error) {
	if _, err := utilversion.ParseSemantic(strings.TrimPrefix(opts.Version, "v")); err != nil || !strings.HasPrefix(opts.Version, "v") {
		return nil, fmt.Errorf("-version %q: want vMAJOR.MINOR.PATCH[-PRERELEASE], as krew requires", opts.Version)
	}
	for _, platform := range opts.Platforms {
		if goos, goarch, ok := strings.Cut(platform, "/"); !ok || goos == "" || goarch == "" {
			return nil, fmt.Errorf("-platforms: %q is not GOOS/GOARCH", platform)
		}
	}
	mtime, err := sourceDate()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, err
	}
	manifest := newManifest(opts.Version)
	var assets []string
	var sums strings.Builder
	for _, platform := range opts.Platforms {
		goos, goarch, _ := strings.Cut(platform, "/")
		name := fmt.Sprintf("%s_%s_%s_%s.tar.gz", binary, opts.Version, goos, goarch)
		archive := filepath.Join(opts.OutDir, name)
		if err := buildArchive(opts, goos, goarch, archive, mtime); err != nil {
			return nil, fmt.Errorf("%s: %w", platform, err)
		}
		sum, err := sha256File(archive)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&sums, "%s  %s\n", sum, name)
		manifest.Spec.Platforms = append(manifest.Spec.Platforms, platformSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": goos, "arch": goarch}},
			URI:      strings.ReplaceAll(opts.URL, "{version}", opts.Version) + "/" + name,
			Sha256:   sum,
			Files:    installedFiles(),
			Bin:      binary,
		})
		assets = append(assets, archive)
	}
	sumsFile := filepath.Join(opts.OutDir, fmt.Sprintf("%s_%s_checksums.txt", binary, opts.Version))
	if err := os.WriteFile(sumsFile, []byte(sums.String()), 0o644); err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(manifest)
	if err != nil {
		return nil, err
	}
	manifestFile := filepath.Join(opts.OutDir, pluginName+".yaml")
	if err := os.WriteFile(manifestFile, data, 0o644); err != nil {
		return nil, err
	}
	return append(assets, sumsFile, manifestFile), nil
}

// buildArchive builds the plugin for goos/goarch, static and without local
// paths, with the version stamped, and writes it with the license and the
// completion scripts (archiveFiles) into a tar.gz whose bytes depend only
// on those files and mtime.
func buildArchive(opts Options, goos, goarch, archive string, mtime time.Time) error {
	dir, err := os.MkdirTemp("", "release-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	cmd := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w -X github.com/schedscope/schedscope/pkg/version.Version="+opts.Version,
		"-o", filepath.Join(dir, binary), "./cmd/kubectl-schedscope")
	cmd.Dir = opts.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	if err := writeCompletions(dir); err != nil {
		return err
	}
	sources := map[string]string{
		binary:          filepath.Join(dir, binary),
		license:         filepath.Join(opts.ModuleDir, license),
		kubectlComplete: filepath.Join(opts.ModuleDir, "cmd", binary, kubectlComplete),
		bashCompletion:  filepath.Join(dir, bashCompletion),
		zshCompletion:   filepath.Join(dir, zshCompletion),
	}
	out, err := os.Create(archive)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(out)
	tw := tar.NewWriter(gz)
	for _, f := range archiveFiles {
		if err := addFile(tw, f.name, sources[f.name], f.mode, mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return out.Close()
}

// writeCompletions writes the plugin's bash and zsh completion scripts
// into dir, as "kubectl-schedscope completion bash|zsh" prints them.
func writeCompletions(dir string) error {
	cmd := app.NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(bashCompletion)), 0o755); err != nil {
		return err
	}
	var bash, zsh bytes.Buffer
	if err := cmd.GenBashCompletionV2(&bash, true); err != nil {
		return fmt.Errorf("bash completion: %w", err)
	}
	if err := cmd.GenZshCompletion(&zsh); err != nil {
		return fmt.Errorf("zsh completion: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, bashCompletion), bash.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, zshCompletion), zsh.Bytes(), 0o644)
}

// addFile writes the file at path into tw as name, with mode and mtime.
func addFile(tw *tar.Writer, name, path string, mode int64, mtime time.Time) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: name, Mode: mode, Size: info.Size(), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, in)
	return err
}

// sourceDate is the archives' file time: SOURCE_DATE_EPOCH (seconds) when
// set, so that a release is reproducible, else the Unix epoch.
func sourceDate() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0), nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", v, err)
	}
	return time.Unix(sec, 0), nil
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

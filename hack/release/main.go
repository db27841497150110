// Command release builds the release assets of the kubectl plugin: a
// kubectl-schedscope archive (tar.gz) for each platform, their sha256 sums
// and the krew plugin manifest that installs them. `make release` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	var (
		opts      Options
		platforms string
	)
	flag.StringVar(&opts.Version, "version", "", "Release version, vMAJOR.MINOR.PATCH[-PRERELEASE], as krew requires; stamped into the binaries.")
	flag.StringVar(&opts.OutDir, "out", "_output/release", "Directory the archives, sums and manifest are written to.")
	flag.StringVar(&platforms, "platforms", strings.Join(DefaultPlatforms, ","), "Comma-separated GOOS/GOARCH pairs to build.")
	flag.StringVar(&opts.URL, "url", DefaultURL, "URL of the release's assets, the archives' directory; {version} is replaced by the version.")
	flag.Parse()
	opts.Platforms = strings.Split(platforms, ",")
	assets, err := Build(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
	for _, a := range assets {
		fmt.Println(a)
	}
}

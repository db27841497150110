package app

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	k8sversion "k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"

	"github.com/schedscope/schedscope/pkg/version"
)

// printVersionAndExitIfRequested is verflag.PrintAndExitIfRequested with
// schedscope's version added: --version and --version=raw print what
// kube-scheduler prints, on one line followed by " (schedscope <version>)",
// and exit. Any other value of --version is left to verflag.
func printVersionAndExitIfRequested(fs *pflag.FlagSet) {
	if printVersion(os.Stdout, fs) {
		os.Exit(0)
	}
	verflag.PrintAndExitIfRequested()
}

// printVersion writes the version line that --version or --version=raw in
// fs asks for to w, and reports whether it wrote one.
func printVersion(w io.Writer, fs *pflag.FlagSet) bool {
	f := fs.Lookup("version")
	if f == nil {
		return false
	}
	info := k8sversion.Get()
	var upstream string
	switch f.Value.String() {
	case "raw":
		upstream = fmt.Sprintf("%#v", info)
	case "true":
		upstream = "Kubernetes " + info.String()
	default:
		return false
	}
	fmt.Fprintf(w, "%s (schedscope %s)\n", upstream, version.Version)
	return true
}

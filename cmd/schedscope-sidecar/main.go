// Command schedscope-sidecar keeps the scheduler's decision records and
// explains them over an API, a web page and metrics.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/schedscope/schedscope/cmd/schedscope-sidecar/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}

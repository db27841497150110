// Command schedscope-scheduler is kube-scheduler that records every
// scheduling decision it makes.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/schedscope/schedscope/cmd/schedscope-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}

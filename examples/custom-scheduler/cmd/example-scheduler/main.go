// Command example-scheduler is the example custom scheduler: kube-scheduler
// with the example's out-of-tree plugins, every plugin observed by
// schedscope.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/schedscope/schedscope/cmd/schedscope-scheduler/app"

	"example.com/custom-scheduler/plugins"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(plugins.Options...)))
}

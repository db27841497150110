// Command example-scheduler-plain is the example custom scheduler without
// schedscope: kube-scheduler with the example's out-of-tree plugins, as their
// authors would build it. The decision-equivalence test compares it with
// example-scheduler.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"

	"example.com/custom-scheduler/plugins"
)

func main() {
	os.Exit(cli.Run(kubeschedulerapp.NewSchedulerCommand(plugins.Options...)))
}

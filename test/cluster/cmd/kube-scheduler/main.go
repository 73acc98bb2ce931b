// Command kube-scheduler is the upstream scheduler, unchanged. The tests whose
// pods must run (outcomes, "used by") need it to bind pods to kwok's fake nodes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}

// Command render writes the monitoring overlay's PrometheusRule from the
// alert rule file and the kustomize overlays of manifests/ into
// manifests/rendered/, or with -verify checks that those files are current.
//
//	go run ./manifests/render
//	go run ./manifests/render -verify
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/schedscope/schedscope/manifests"
)

func main() {
	verify := flag.Bool("verify", false, "Check that manifests/rendered is up to date instead of writing it.")
	flag.Parse()
	if err := run(*verify); err != nil {
		fmt.Fprintf(os.Stderr, "render: %v\n", err)
		os.Exit(1)
	}
}

func run(verify bool) error {
	if verify {
		return manifests.Verify()
	}
	// First the PrometheusRule, which the monitoring overlay reads.
	path, err := manifests.WritePrometheusRule()
	if err != nil {
		return err
	}
	fmt.Println(path)
	for _, o := range manifests.Overlays {
		y, err := manifests.Render(o)
		if err != nil {
			return err
		}
		if err := os.WriteFile(manifests.RenderedPath(o), y, 0o644); err != nil {
			return err
		}
		fmt.Println(manifests.RenderedPath(o))
	}
	return nil
}

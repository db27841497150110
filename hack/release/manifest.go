package main

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// plugin is a krew plugin manifest (krew.googlecontainertools.github.com/
// v1alpha2 Plugin), the fields a release sets; krew's own validation checks
// it in the tests.
type plugin struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Platforms        []platformSpec `json:"platforms"`
	} `json:"spec"`
}

// platformSpec is one archive of the plugin and the platforms it serves.
type platformSpec struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Files    []fileOperation       `json:"files"`
	Bin      string                `json:"bin"`
}

// fileOperation copies a file of the archive into the plugin's
// installation directory.
type fileOperation struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// archiveFiles are the files of each archive, in order: the plugin and
// its license, which krew's index requires.
var archiveFiles = []string{binary, license}

// installedFiles are the file operations that install archiveFiles.
func installedFiles() []fileOperation {
	var ops []fileOperation
	for _, f := range archiveFiles {
		ops = append(ops, fileOperation{From: f, To: "."})
	}
	return ops
}

func newManifest(version string) *plugin {
	p := &plugin{TypeMeta: metav1.TypeMeta{APIVersion: "krew.googlecontainertools.github.com/v1alpha2", Kind: "Plugin"}}
	p.Metadata.Name = pluginName
	p.Spec.Version = version
	p.Spec.Homepage = "https://github.com/schedscope/schedscope"
	p.Spec.ShortDescription = "Explain why the scheduler placed a pod"
	p.Spec.Description = `Explains the decisions of schedscope-scheduler (kube-scheduler with every
plugin observed) for a pod: each node's Filter verdict with the plugin and
reasons that rejected it, each Score per plugin, preemption, and the time
every step took. It reads the records of the schedscope sidecar through
the kube-apiserver's aggregated API schedscope.io/v1alpha1, with your own
credentials: you see the pods and nodes your RBAC lets you list.

  kubectl schedscope explain pod/web-1 -n shop
  kubectl schedscope pending
`
	return p
}

package main

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
		Caveats          string         `json:"caveats"`
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

// installedFiles are the file operations that install an archive's
// files (archiveFiles): each into the same directory of the plugin's
// installation directory.
func installedFiles() []fileOperation {
	var ops []fileOperation
	dirs := map[string]bool{}
	for _, f := range archiveFiles {
		dir, _, ok := strings.Cut(f.name, "/")
		switch {
		case !ok:
			ops = append(ops, fileOperation{From: f.name, To: "."})
		case !dirs[dir]:
			dirs[dir] = true
			ops = append(ops, fileOperation{From: dir + "/*", To: dir})
		}
	}
	return ops
}

// caveats is what krew prints after installing version: what the cluster
// needs, and how to turn on shell completion from the installed files.
func caveats(version string) string {
	store := fmt.Sprintf(`${KREW_ROOT:-$HOME/.krew}/store/%s/%s`, pluginName, version)
	return fmt.Sprintf(`kubectl schedscope reads what schedscope recorded: the cluster must run
schedscope (its Helm chart charts/schedscope: the scheduler, the sidecar
and the APIService v1alpha1.schedscope.io), and only pods whose
spec.schedulerName is one of its profiles are recorded. See
  %[1]s/blob/main/docs/deploy.md
  %[1]s/blob/main/docs/sidecar.md#kubectl-plugin

Shell completion of "kubectl schedscope" (kubectl 1.26 and later): put
%[3]s on your PATH, e.g.
  ln -s "%[2]s/%[3]s" "${KREW_ROOT:-$HOME/.krew}/bin/"
Of %[4]s run by itself, in bash or zsh:
  source "%[2]s/%[5]s"
  source "%[2]s/%[6]s"
`, homepage, store, kubectlComplete, binary, bashCompletion, zshCompletion)
}

func newManifest(version string) *plugin {
	p := &plugin{TypeMeta: metav1.TypeMeta{APIVersion: "krew.googlecontainertools.github.com/v1alpha2", Kind: "Plugin"}}
	p.Metadata.Name = pluginName
	p.Spec.Version = version
	p.Spec.Homepage = homepage
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
	p.Spec.Caveats = caveats(version)
	return p
}

package version

import "runtime/debug"

// Kubernetes is the version of k8s.io/kubernetes the running program is
// built with, as its build information records it ("v1.36.3"); "" when the
// program has no build information or does not depend on k8s.io/kubernetes.
func Kubernetes() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range info.Deps {
		if m.Path == "k8s.io/kubernetes" {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// Package api serves the explain API: JSON over HTTP under
// /apis/schedscope.io/v1alpha1, with
// every request authenticated and authorized the way Kubernetes components
// do it. A caller sees a pod's attempts only if it may get the pod; the
// aggregate endpoints (pods, pending, rejections) include only the
// namespaces in which the caller may list pods.
package api

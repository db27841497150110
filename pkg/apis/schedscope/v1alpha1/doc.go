// Package v1alpha1 is the explain API's contract: its paths, the types of
// its answers and the bounds of its parameters. The sidecar serves it, the
// kubectl plugin and the web page read it; errors are metav1.Status, as the
// kube-apiserver's are. The answer types are the API's own: the sidecar
// converts decision records into them with the functions of conversion.go,
// so that a change of the record is not a change of the API.
package v1alpha1

import "time"

// GroupName and Version name the API. The kube-apiserver can serve it as an
// aggregated API (an APIService for Version.GroupName), so the same paths
// work through the apiserver, with the caller's identity, and on the
// sidecar's own port.
const (
	GroupName = "schedscope.io"
	Version   = "v1alpha1"
)

// Prefix is where the API is served.
const Prefix = "/apis/" + GroupName + "/" + Version + "/"

// UIPath is where the web page is served under the API's path, so that
// the kube-apiserver's aggregator, and kubectl proxy through it, serve it
// with the caller's own credentials; the kube-apiserver authorizes it as
// the resource "ui" of the group.
const UIPath = Prefix + "ui/"

// Bounds of the limit parameters.
const (
	DefaultLimit    = 100
	MaxLimit        = 10000
	MaxRejectionAge = 366 * 24 * time.Hour
	// MaxBuckets bounds the time series of the rejections endpoint.
	MaxBuckets = 1000
)

// Query parameters.
const (
	ParamLimit   = "limit"
	ParamOffset  = "offset"
	ParamAttempt = "attempt"
	ParamNode    = "node"
	ParamGroup   = "group"
	ParamBy      = "by"
	ParamSince   = "since"
	ParamUntil   = "until"
	ParamStep    = "step"
	// ParamCluster keeps the answers of one cluster (a sidecar's
	// --cluster-name) when several write one store.
	ParamCluster = "cluster"
	// ParamShadow asks the explain endpoints for a shadow profile's run
	// of the attempt instead of the live attempt.
	ParamShadow = "shadow"
)

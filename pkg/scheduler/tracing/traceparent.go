package tracing

import "k8s.io/apimachinery/pkg/util/validation/field"

// TraceparentRole is what a pod's TraceparentAnnotation is to the traces
// of its attempts.
type TraceparentRole string

// The roles of a pod's TraceparentAnnotation.
const (
	// TraceparentLink, the default, links the attempt's root span to the
	// caller's span; the attempt's trace has an ID of its own, drawn at
	// random, which the pod's creator cannot choose.
	TraceparentLink TraceparentRole = "link"
	// TraceparentParent makes the caller's span the parent of the
	// attempt's root span, which joins the caller's trace ID.
	TraceparentParent TraceparentRole = "parent"
)

// supportedTraceparentRoles lists the values a TraceparentRole may take.
var supportedTraceparentRoles = []string{string(TraceparentLink), string(TraceparentParent)}

// validateTraceparentRole returns an error naming path and the bad value
// unless r is a supported role.
func validateTraceparentRole(r TraceparentRole, path *field.Path) error {
	switch r {
	case TraceparentLink, TraceparentParent:
		return nil
	}
	return field.NotSupported(path, r, supportedTraceparentRoles)
}

package api

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/sidecar/explain"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
)

// ParamError is a bad request parameter.
type ParamError struct {
	Param string
	Value string
	Msg   string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("parameter %q: %s", e.Param, e.Msg)
}

func paramErr(param, value, format string, args ...any) *ParamError {
	return &ParamError{Param: param, Value: value, Msg: fmt.Sprintf(format, args...)}
}

// checkKnown rejects parameters the endpoint does not take and repeated ones.
func checkKnown(q url.Values, known ...string) error {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		found := false
		for _, kn := range known {
			if k == kn {
				found = true
				break
			}
		}
		if k == "" {
			return paramErr("(empty name)", "", "a parameter has an empty name")
		}
		if !found {
			if len(known) == 0 {
				return paramErr(k, "", "unknown parameter; this endpoint takes none")
			}
			return paramErr(k, "", "unknown parameter; this endpoint takes %s", strings.Join(known, ", "))
		}
		if len(q[k]) > 1 {
			return paramErr(k, "", "given %d times, at most once allowed", len(q[k]))
		}
	}
	return nil
}

func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, paramErr(name, v, "%q is not an integer", v)
	}
	if n < lo || n > hi {
		return 0, paramErr(name, v, "%d is out of range [%d, %d]", n, lo, hi)
	}
	return n, nil
}

// ListParams are the parameters of the attempts and pod list endpoints.
type ListParams struct {
	Limit int
	// Cluster keeps one cluster's answers; empty keeps every cluster's.
	Cluster string
}

// ParseListParams parses the parameters of the attempts and pod list
// endpoints.
func ParseListParams(q url.Values) (ListParams, error) {
	var p ListParams
	if err := checkKnown(q, v1alpha1.ParamLimit, v1alpha1.ParamCluster); err != nil {
		return p, err
	}
	var err error
	if p.Cluster, err = clusterParam(q); err != nil {
		return p, err
	}
	p.Limit, err = intParam(q, v1alpha1.ParamLimit, v1alpha1.DefaultLimit, 1, v1alpha1.MaxLimit)
	return p, err
}

// ParseLimit parses the parameters of the attempts and pod list endpoints
// and returns the limit.
func ParseLimit(q url.Values) (int, error) {
	p, err := ParseListParams(q)
	return p.Limit, err
}

// clusterParam parses the cluster parameter: absent keeps every cluster,
// and a cluster is named by a DNS-1123 label (store.ValidateClusterName).
func clusterParam(q url.Values) (string, error) {
	if !q.Has(v1alpha1.ParamCluster) {
		return "", nil
	}
	c := q.Get(v1alpha1.ParamCluster)
	if c == "" {
		return "", paramErr(v1alpha1.ParamCluster, c, "empty; leave it out to keep every cluster")
	}
	if err := store.ValidateClusterName(c); err != nil {
		return "", paramErr(v1alpha1.ParamCluster, c, "%v", err)
	}
	return c, nil
}

// ExplainParams are the parameters of the explain endpoint.
type ExplainParams struct {
	// Attempt is the attempt number; 0 means the latest.
	Attempt int
	// Node asks why the pod did (not) land on this node.
	Node string
	// Cluster is the pod's cluster; empty means the cluster of its latest
	// attempt.
	Cluster string
	// Shadow asks for this shadow profile's run of the attempt instead of
	// the live attempt.
	Shadow string
	explain.Options
}

// ParseExplainParams parses the parameters of the explain endpoint.
func ParseExplainParams(q url.Values) (ExplainParams, error) {
	p := ExplainParams{}
	if err := checkKnown(q, v1alpha1.ParamAttempt, v1alpha1.ParamNode, v1alpha1.ParamGroup, v1alpha1.ParamOffset, v1alpha1.ParamLimit, v1alpha1.ParamCluster, v1alpha1.ParamShadow); err != nil {
		return p, err
	}
	var err error
	if p.Cluster, err = clusterParam(q); err != nil {
		return p, err
	}
	if q.Has(v1alpha1.ParamShadow) {
		if p.Shadow, err = shadowName(v1alpha1.ParamShadow, q.Get(v1alpha1.ParamShadow)); err != nil {
			return p, err
		}
	}
	if p.Attempt, err = intParam(q, v1alpha1.ParamAttempt, 0, 1, 1<<30); err != nil {
		return p, err
	}
	if p.Group, err = intParam(q, v1alpha1.ParamGroup, explain.AllGroups, 0, 1<<20); err != nil {
		return p, err
	}
	if p.Offset, err = intParam(q, v1alpha1.ParamOffset, 0, 0, 1<<30); err != nil {
		return p, err
	}
	if p.Limit, err = intParam(q, v1alpha1.ParamLimit, v1alpha1.DefaultLimit, 1, v1alpha1.MaxLimit); err != nil {
		return p, err
	}
	if _, ok := q[v1alpha1.ParamNode]; ok {
		p.Node = q.Get(v1alpha1.ParamNode)
		if errs := validation.IsDNS1123Subdomain(p.Node); len(errs) > 0 {
			return p, paramErr(v1alpha1.ParamNode, p.Node, "%q is not a node name: %s", p.Node, strings.Join(errs, "; "))
		}
		for _, k := range []string{v1alpha1.ParamGroup, v1alpha1.ParamOffset, v1alpha1.ParamLimit} {
			if q.Has(k) {
				return p, paramErr(k, q.Get(k), "cannot be combined with %q", v1alpha1.ParamNode)
			}
		}
	}
	return p, nil
}

// ParseRejectionParams parses the parameters of the rejections endpoint.
// since and until are durations before now ("1h") or RFC 3339 times;
// since defaults to one hour before now and must not be after now. step
// (a duration) adds a time series of the window in buckets of step.
func ParseRejectionParams(q url.Values, now time.Time) (store.RejectionQuery, error) {
	rq := store.RejectionQuery{}
	if err := checkKnown(q, v1alpha1.ParamBy, v1alpha1.ParamSince, v1alpha1.ParamUntil, v1alpha1.ParamStep, v1alpha1.ParamLimit, v1alpha1.ParamCluster); err != nil {
		return rq, err
	}
	var err error
	if rq.Cluster, err = clusterParam(q); err != nil {
		return rq, err
	}
	switch by := q.Get(v1alpha1.ParamBy); by {
	case v1alpha1.ByPlugin, v1alpha1.ByNode:
		rq.By = by
	case "":
		return rq, paramErr(v1alpha1.ParamBy, by, "required: %q or %q", v1alpha1.ByPlugin, v1alpha1.ByNode)
	default:
		return rq, paramErr(v1alpha1.ParamBy, by, "%q is not %q or %q", by, v1alpha1.ByPlugin, v1alpha1.ByNode)
	}
	if rq.Since, rq.Until, err = windowParams(q, now); err != nil {
		return rq, err
	}
	if rq.Limit, err = intParam(q, v1alpha1.ParamLimit, v1alpha1.DefaultLimit, 1, v1alpha1.MaxLimit); err != nil {
		return rq, err
	}
	if v := q.Get(v1alpha1.ParamStep); v != "" {
		step, err := time.ParseDuration(v)
		if err != nil || step < time.Second {
			return rq, paramErr(v1alpha1.ParamStep, v, "%q is not a duration of at least 1s", v)
		}
		rq.Step = step
		if rq.Until.IsZero() {
			rq.Until = now
		}
		if !rq.Since.Before(rq.Until) {
			return rq, paramErr(v1alpha1.ParamSince, q.Get(v1alpha1.ParamSince), "must be before %q (%s)", v1alpha1.ParamUntil, rq.Until.Format(time.RFC3339))
		}
		if n := rq.Buckets(); n > v1alpha1.MaxBuckets {
			return rq, paramErr(v1alpha1.ParamStep, v, "makes %d buckets of the window, at most %d allowed", n, v1alpha1.MaxBuckets)
		}
	}
	return rq, nil
}

// windowParams parses since and until: durations before now ("1h") or
// RFC 3339 times; since defaults to one hour before now and must not be
// after now, and until, when given, must be after since.
func windowParams(q url.Values, now time.Time) (since, until time.Time, err error) {
	if since, err = timeParam(q, v1alpha1.ParamSince, now, now.Add(-time.Hour)); err != nil {
		return since, until, err
	}
	if since.After(now) {
		return since, until, paramErr(v1alpha1.ParamSince, q.Get(v1alpha1.ParamSince), "%s is in the future", since.Format(time.RFC3339))
	}
	if until, err = timeParam(q, v1alpha1.ParamUntil, now, time.Time{}); err != nil {
		return since, until, err
	}
	if !until.IsZero() && !since.Before(until) {
		return since, until, paramErr(v1alpha1.ParamSince, q.Get(v1alpha1.ParamSince), "must be before %q (%s)", v1alpha1.ParamUntil, until.Format(time.RFC3339))
	}
	return since, until, nil
}

// ParseShadowParams parses the parameters of the shadows endpoints, for
// the shadow profile named shadow: since and until as the rejections
// endpoint takes them, and cluster.
func ParseShadowParams(q url.Values, shadow string, now time.Time) (store.ShadowQuery, error) {
	sq := store.ShadowQuery{}
	if err := checkKnown(q, v1alpha1.ParamSince, v1alpha1.ParamUntil, v1alpha1.ParamCluster); err != nil {
		return sq, err
	}
	var err error
	if sq.Shadow, err = shadowName("shadow", shadow); err != nil {
		return sq, err
	}
	if sq.Cluster, err = clusterParam(q); err != nil {
		return sq, err
	}
	sq.Since, sq.Until, err = windowParams(q, now)
	return sq, err
}

// shadowName checks the name of a shadow profile given as param: a
// schedulerName, which Kubernetes validates as a DNS-1123 subdomain.
func shadowName(param, name string) (string, error) {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", paramErr(param, name, "%q is not a scheduler profile name: %s", name, strings.Join(errs, "; "))
	}
	return name, nil
}

func timeParam(q url.Values, name string, now, def time.Time) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 || d > v1alpha1.MaxRejectionAge {
			return time.Time{}, paramErr(name, v, "duration %s is out of range [0, %s]", v, v1alpha1.MaxRejectionAge)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, paramErr(name, v, "%q is neither a duration (1h30m) nor an RFC 3339 time", v)
	}
	return t, nil
}

// validatePod checks a namespace and pod name from the path.
func validatePod(namespace, name string) error {
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return paramErr("namespace", namespace, "%q is not a namespace name: %s", namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return paramErr("name", name, "%q is not a pod name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

func validateUID(uid string) error {
	if uid == "" || len(uid) > 128 {
		return paramErr("uid", uid, "must be 1 to 128 characters")
	}
	for _, r := range uid {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return paramErr("uid", uid, "%q is not a UID", uid)
		}
	}
	return nil
}

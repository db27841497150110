package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/sidecar/explain"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
)

// Config configures the API.
type Config struct {
	Store store.Reader
	// Authenticator and Authorizer decide who may see what; in a cluster
	// they delegate to the kube-apiserver (TokenReview, SubjectAccessReview).
	Authenticator authenticator.Request
	Authorizer    authorizer.UnconditionalAuthorizer
	// Status reports the follower's status for /apis/schedscope.io/v1alpha1/status; may be nil.
	Status func() v1alpha1.FollowerStatus
	// TraceURL links a trace in the trace viewer (Jaeger, Tempo,
	// Grafana), {traceID} standing for its ID; may be empty.
	TraceURL string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// MaxInFlightPerUser bounds the requests one user may have in flight;
	// more are answered 429. 0 means DefaultMaxInFlightPerUser.
	MaxInFlightPerUser int
	// MaxInFlight bounds the requests of every user together in flight;
	// more are answered 429. 0 means DefaultMaxInFlight.
	MaxInFlight int
	// QueryTimeout is each request's deadline: a store query that runs
	// past it is answered 503. 0 means DefaultQueryTimeout.
	QueryTimeout time.Duration
	// MaxRejectionsWindow bounds the window rejections and shadow runs are
	// counted over; a longer one is answered 422. 0 means
	// DefaultMaxRejectionsWindow.
	MaxRejectionsWindow time.Duration
	// StillPending, when set, reports whether a pod whose latest recorded
	// attempt failed is still waiting: it exists and has no node. Pods for
	// which it returns false (deleted, or bound without a record the
	// sidecar received) are left out of /apis/schedscope.io/v1alpha1/pending.
	StillPending func(v1alpha1.PodStatus) bool
	// Cluster is the cluster the API answers for (the sidecar's
	// --cluster-name), which StillPending and Hints see.
	Cluster string
	// AllClusters makes the API answer for every cluster of its store
	// (the sidecar's --serve-all-clusters), each request authorized by
	// this cluster's kube-apiserver: pods of other clusters are listed
	// unchecked and explained without hints. The store must be opened
	// with store.Options.AllClusters too. Without it, a request naming
	// another cluster is answered 404.
	AllClusters bool
	// Hints, when set, returns what would make the pod of an unschedulable
	// attempt fit; showNodes is whether the caller may list nodes, and
	// without it the hints name no node.
	Hints func(a *record.Attempt, showNodes bool) []v1alpha1.Hint
	// SchedulerName, when set, returns the spec.schedulerName of a pod of
	// Cluster; ok is false when the pod is not known. A pod without
	// attempts whose schedulerName names a shadow profile is explained
	// as such.
	SchedulerName func(namespace, name string) (schedulerName string, ok bool)
}

// The defaults of Config's limits.
const (
	DefaultMaxInFlightPerUser  = 4
	DefaultMaxInFlight         = 8
	DefaultQueryTimeout        = 10 * time.Second
	DefaultMaxRejectionsWindow = 7 * 24 * time.Hour
)

type handler struct {
	Config
	inFlight *perUserLimit
	// slots holds a token for each request in flight, at most MaxInFlight.
	slots chan struct{}
}

// New returns the API handler, serving under v1alpha1.Prefix.
func New(cfg Config) (http.Handler, error) {
	if cfg.Store == nil || cfg.Authenticator == nil || cfg.Authorizer == nil {
		return nil, errors.New("the API needs a store, an authenticator and an authorizer")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	for _, d := range []struct {
		limit *int
		def   int
		what  string
	}{
		{&cfg.MaxInFlightPerUser, DefaultMaxInFlightPerUser, "requests in flight per user"},
		{&cfg.MaxInFlight, DefaultMaxInFlight, "requests in flight"},
	} {
		if *d.limit == 0 {
			*d.limit = d.def
		}
		if *d.limit < 0 {
			return nil, fmt.Errorf("at most %d %s: want at least 1", *d.limit, d.what)
		}
	}
	for _, d := range []struct {
		limit *time.Duration
		def   time.Duration
		what  string
	}{
		{&cfg.QueryTimeout, DefaultQueryTimeout, "query timeout"},
		{&cfg.MaxRejectionsWindow, DefaultMaxRejectionsWindow, "longest rejections window"},
	} {
		if *d.limit == 0 {
			*d.limit = d.def
		}
		if *d.limit < 0 {
			return nil, fmt.Errorf("%s %v: want a positive duration", d.what, *d.limit)
		}
	}
	h := &handler{Config: cfg, inFlight: newPerUserLimit(cfg.MaxInFlightPerUser), slots: make(chan struct{}, cfg.MaxInFlight)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+v1alpha1.Prefix+"namespaces/{namespace}/pods/{name}/attempts", h.podAttempts)
	mux.HandleFunc("GET "+v1alpha1.Prefix+"namespaces/{namespace}/pods/{name}/explain", h.podExplain)
	mux.HandleFunc("GET "+v1alpha1.Prefix+"pods/{uid}/attempts", h.podAttempts)
	mux.HandleFunc("GET "+v1alpha1.Prefix+"pods/{uid}/explain", h.podExplain)
	mux.HandleFunc("GET "+v1alpha1.Prefix+"pods", h.pods(false))
	mux.HandleFunc("GET "+v1alpha1.Prefix+"pending", h.pods(true))
	mux.HandleFunc("GET "+v1alpha1.Prefix+"namespaces/{namespace}/pods", h.pods(false))
	mux.HandleFunc("GET "+v1alpha1.Prefix+"namespaces/{namespace}/pending", h.pods(true))
	mux.HandleFunc("GET "+v1alpha1.Prefix+"rejections", h.rejections)
	mux.HandleFunc("GET "+v1alpha1.Prefix+"namespaces/{namespace}/rejections", h.rejections)
	mux.HandleFunc("GET "+v1alpha1.Prefix+"shadows/{shadow}", h.shadows)
	mux.HandleFunc("GET "+v1alpha1.Prefix+"namespaces/{namespace}/shadows/{shadow}", h.shadows)
	mux.HandleFunc("GET "+v1alpha1.Prefix+"status", h.status)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	return h.authenticated(h.servedClusters(mux)), nil
}

// servedClusters answers 404 to a request that names a cluster the API
// does not answer for; the store reads no other cluster's records either.
// A name that is no cluster name is left to the endpoint's 400.
func (h *handler) servedClusters(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.URL.Query().Get(v1alpha1.ParamCluster)
		if h.AllClusters || c == "" || c == h.Cluster || store.ValidateClusterName(c) != nil {
			next.ServeHTTP(w, r)
			return
		}
		own := fmt.Sprintf("cluster %q", h.Cluster)
		if h.Cluster == "" {
			own = "the unnamed cluster"
		}
		writeError(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf(
			"cluster %q is not served here: this API answers for %s only (a sidecar started with --serve-all-clusters answers for every cluster of its store)", c, own))
	})
}

// writeError answers with a metav1.Status, as the kube-apiserver does.
func writeError(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg,
		Details: &metav1.StatusDetails{Group: v1alpha1.GroupName},
	})
}

// answerOptions encode answers as encoding/json does.
var answerOptions = jsonv1.DefaultOptionsV1()

// writeJSON writes v as it is encoded, a buffer at a time, so that a long
// answer is never held whole in memory as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	if jsonv2.MarshalWrite(w, v, answerOptions) == nil {
		_, _ = io.WriteString(w, "\n")
	}
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var pe *ParamError
	switch {
	case errors.As(err, &pe):
		writeError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, pe.Error())
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
	case errors.Is(err, store.ErrQueryTimeout):
		klog.FromContext(r.Context()).V(2).Info("A query ran past the API's query timeout", "path", r.URL.Path, "timeout", h.QueryTimeout)
		writeError(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, fmt.Sprintf(
			"the query ran past the API's query timeout (%v): narrow it: a shorter window (since, until), one namespace (%snamespaces/{namespace}/...), one cluster (cluster) or a smaller limit",
			h.QueryTimeout, v1alpha1.Prefix))
	default:
		klog.FromContext(r.Context()).Error(err, "Serving the explain API", "path", r.URL.Path)
		writeError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "internal error; see the sidecar's log")
	}
}

// selectPod authenticates the caller, checks that it may get the pod named
// by the path and returns the pod's selector; it has written the response
// when ok is false.
func (h *handler) selectPod(w http.ResponseWriter, r *http.Request) (u user.Info, sel store.PodSelector, ok bool) {
	u = userOf(r)
	ctx := r.Context()
	if uid := r.PathValue("uid"); uid != "" || r.PathValue("namespace") == "" {
		if err := validateUID(uid); err != nil {
			h.fail(w, r, err)
			return u, sel, false
		}
		// The UID must be resolved to a name before it can be authorized.
		// A caller that may not get the pod is answered as if no pod had
		// the UID: neither the pod's name nor its existence is disclosed.
		sel = store.PodSelector{UID: uid}
		latest, err := h.Store.Attempts(ctx, sel, 1)
		if err != nil {
			h.fail(w, r, err)
			return u, sel, false
		}
		if len(latest) > 0 {
			pod := latest[0].Pod
			ok, err := allowed(ctx, h.Authorizer, podAttributes(u, "get", pod.Namespace, pod.Name))
			if err != nil {
				h.fail(w, r, err)
				return u, sel, false
			}
			if ok {
				return u, sel, true
			}
		}
		writeNotRecorded(w, sel)
		return u, sel, false
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if err := validatePod(ns, name); err != nil {
		h.fail(w, r, err)
		return u, sel, false
	}
	if !authorize(ctx, h.Authorizer, w, podAttributes(u, "get", ns, name)) {
		return u, sel, false
	}
	return u, store.PodSelector{Namespace: ns, Name: name}, true
}

// writeNotRecorded answers 404: no attempts recorded for the pod of sel.
func writeNotRecorded(w http.ResponseWriter, sel store.PodSelector) {
	writeError(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("no attempts recorded for %s", describe(sel)))
}

func describe(sel store.PodSelector) string {
	in := ""
	if sel.Cluster != "" {
		in = fmt.Sprintf(" in cluster %q", sel.Cluster)
	}
	if sel.UID != "" {
		return fmt.Sprintf("pod UID %q%s", sel.UID, in)
	}
	return fmt.Sprintf("pod %s/%s%s", sel.Namespace, sel.Name, in)
}

func (h *handler) podAttempts(w http.ResponseWriter, r *http.Request) {
	_, sel, ok := h.selectPod(w, r)
	if !ok {
		return
	}
	lp, err := ParseListParams(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sel.Cluster = lp.Cluster
	items, err := h.Store.Attempts(r.Context(), sel, lp.Limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(items) == 0 {
		writeNotRecorded(w, sel)
		return
	}
	writeJSON(w, http.StatusOK, v1alpha1.AttemptList{Items: items})
}

func (h *handler) podExplain(w http.ResponseWriter, r *http.Request) {
	u, sel, ok := h.selectPod(w, r)
	if !ok {
		return
	}
	p, err := ParseExplainParams(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	mayListNodes, err := allowed(r.Context(), h.Authorizer, nodeListAttributes(u))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if p.Node != "" && !mayListNodes {
		writeError(w, http.StatusForbidden, metav1.StatusReasonForbidden, forbiddenMessage(nodeListAttributes(u))+": asking about one node needs it")
		return
	}
	if sel.Cluster = p.Cluster; sel.Cluster == "" {
		// The pod's latest attempt's cluster: attempt numbers and the
		// explanation are one cluster's pod's.
		latest, err := h.Store.Attempts(r.Context(), sel, 1)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if len(latest) > 0 {
			sel.Cluster = latest[0].Cluster
		}
	}
	rec, err := h.Store.Attempt(r.Context(), sel, p.Attempt)
	if errors.Is(err, store.ErrNotFound) {
		h.writeNoAttempt(w, r, sel, p.Attempt)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	a := rec.Attempt
	if p.Shadow != "" {
		if a = shadowAttempt(a, p.Shadow); a == nil {
			writeError(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf(
				"attempt %d of %s has no run of shadow profile %q", rec.Attempt.Attempt, describe(sel), p.Shadow))
			return
		}
	}
	if p.Node != "" {
		ans, ok := explain.Node(a, p.Node)
		if !ok {
			writeError(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("node %q was not part of attempt %d of %s", p.Node, a.Attempt, describe(sel)))
			return
		}
		writeJSON(w, http.StatusOK, ans)
		return
	}
	if p.Group != explain.AllGroups {
		if e := explain.Explain(a, explain.Options{Group: explain.AllGroups, Limit: 1}); p.Group >= len(e.Groups) {
			h.fail(w, r, paramErr(v1alpha1.ParamGroup, fmt.Sprint(p.Group), "attempt %d has %d groups", a.Attempt, len(e.Groups)))
			return
		}
	}
	e := explain.Explain(a, p.Options)
	e.Cluster, e.Seq, e.TraceID = sel.Cluster, rec.Seq, rec.TraceID
	if h.Hints != nil && sel.Cluster == h.Cluster && p.Shadow == "" {
		e.Hints = h.Hints(a, mayListNodes)
	}
	if !mayListNodes {
		explain.HideNodes(e)
		if p.Shadow != "" {
			// A live attempt's node is the pod's own; a shadow's is not.
			e.SelectedNode = ""
		}
	}
	writeJSON(w, http.StatusOK, e)
}

// shadowAttempt returns the record of the run of shadow in the live
// attempt a, nil when a has none.
func shadowAttempt(a *record.Attempt, shadow string) *record.Attempt {
	for _, run := range a.Shadows {
		if run.Profile == shadow {
			return run.Attempt
		}
	}
	return nil
}

// writeNoAttempt answers 404 for an explanation of the pod of sel with no
// attempt number (0: none at all) recorded. A pod of the sidecar's own
// cluster whose schedulerName names a shadow profile is told why.
func (h *handler) writeNoAttempt(w http.ResponseWriter, r *http.Request, sel store.PodSelector, number int) {
	if number > 0 {
		writeError(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("no attempt %d recorded for %s", number, describe(sel)))
		return
	}
	msg := fmt.Sprintf("no attempts recorded for %s", describe(sel))
	if h.SchedulerName != nil && sel.Name != "" && (sel.Cluster == "" || sel.Cluster == h.Cluster) {
		if name, ok := h.SchedulerName(sel.Namespace, sel.Name); ok {
			live, err := h.Store.ShadowOf(r.Context(), h.Cluster, name)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			if live != "" {
				msg = fmt.Sprintf("%s: its spec.schedulerName %q names a shadow profile of %q, and shadows never schedule pods; set spec.schedulerName to a live profile, such as %q",
					msg, name, live, live)
			}
		}
	}
	writeError(w, http.StatusNotFound, metav1.StatusReasonNotFound, msg)
}

// listScope authorizes listing pods in the path's namespace, or at the
// cluster scope when the path names none: one decision per request,
// whatever the store holds. It returns the namespaces to keep (nil: all);
// it has written the response when ok is false.
func (h *handler) listScope(w http.ResponseWriter, r *http.Request, u user.Info) (namespaces []string, ok bool) {
	ns := r.PathValue("namespace")
	if ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			h.fail(w, r, paramErr("namespace", ns, "%q is not a namespace name: %s", ns, strings.Join(errs, "; ")))
			return nil, false
		}
		namespaces = []string{ns}
	}
	attrs := podAttributes(u, "list", ns, "")
	allow, err := allowed(r.Context(), h.Authorizer, attrs)
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	if !allow {
		msg := forbiddenMessage(attrs)
		if ns == "" {
			msg += "; ask for one namespace: " + v1alpha1.Prefix + "namespaces/{namespace}/" + strings.TrimPrefix(r.URL.Path, v1alpha1.Prefix)
		}
		writeError(w, http.StatusForbidden, metav1.StatusReasonForbidden, msg)
		return nil, false
	}
	return namespaces, true
}

func (h *handler) pods(pendingOnly bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u := userOf(r)
		nss, ok := h.listScope(w, r, u)
		if !ok {
			return
		}
		lp, err := ParseListParams(r.URL.Query())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		limit := lp.Limit
		filter := pendingOnly && h.StillPending != nil
		fetch := limit
		if filter {
			// Leave room for the pods the filter drops.
			fetch = 2 * limit
		}
		items, err := h.Store.Pods(r.Context(), store.PodListOptions{PendingOnly: pendingOnly, Namespaces: nss, Cluster: lp.Cluster, Limit: fetch})
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if filter {
			kept := items[:0]
			for _, it := range items {
				// Only the sidecar's own cluster's pods can be checked.
				if it.Cluster != h.Cluster || h.StillPending(it) {
					kept = append(kept, it)
				}
			}
			items = kept
		}
		if len(items) > limit {
			items = items[:limit]
		}
		writeJSON(w, http.StatusOK, v1alpha1.PodList{Items: items})
	}
}

func (h *handler) rejections(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	now := h.Now()
	rq, err := ParseRejectionParams(r.URL.Query(), now)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.windowFits(w, rq.Since, rq.Until, now, "rejections") {
		return
	}
	if rq.By == v1alpha1.ByNode && !authorize(r.Context(), h.Authorizer, w, nodeListAttributes(u)) {
		return
	}
	var ok bool
	if rq.Namespaces, ok = h.listScope(w, r, u); !ok {
		return
	}
	items, err := h.Store.Rejections(r.Context(), rq)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	list := v1alpha1.RejectionList{By: rq.By, Since: rq.Since, Until: rq.Until, Items: items}
	if rq.Step > 0 {
		list.Step = rq.Step.String()
	}
	writeJSON(w, http.StatusOK, list)
}

// windowFits checks that the window from since to until (zero: now) is
// at most MaxRejectionsWindow; it has answered 422 when it is not.
func (h *handler) windowFits(w http.ResponseWriter, since, until, now time.Time, what string) bool {
	if until.IsZero() {
		until = now
	}
	if window := until.Sub(since); window > h.MaxRejectionsWindow {
		writeError(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, fmt.Sprintf(
			"parameter %q: the window of %v is longer than %v, the longest the API counts %s over: narrow it with %q and %q",
			v1alpha1.ParamSince, window, h.MaxRejectionsWindow, what, v1alpha1.ParamSince, v1alpha1.ParamUntil))
		return false
	}
	return true
}

// shadows answers the summary of a shadow profile's runs, to callers who
// may list pods in the namespace asked for (in every namespace without
// one), as rejections are.
func (h *handler) shadows(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	now := h.Now()
	sq, err := ParseShadowParams(r.URL.Query(), r.PathValue("shadow"), now)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.windowFits(w, sq.Since, sq.Until, now, "shadow runs") {
		return
	}
	var ok bool
	if sq.Namespaces, ok = h.listScope(w, r, u); !ok {
		return
	}
	sum, err := h.Store.ShadowSummary(r.Context(), sq)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	if !authorize(r.Context(), h.Authorizer, w, statusAttributes(u)) {
		return
	}
	if err := checkKnown(r.URL.Query()); err != nil {
		h.fail(w, r, err)
		return
	}
	// The follower first: it stores records before it advances its
	// cursor, so the store read after it holds at least what the cursor
	// covers.
	s := v1alpha1.Status{TraceURL: h.TraceURL}
	if h.Status != nil {
		fs := h.Status()
		s.Follower = &fs
	}
	st, err := h.Store.Stats(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	s.Store = st
	writeJSON(w, http.StatusOK, s)
}

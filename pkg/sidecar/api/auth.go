package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// authenticated wraps next so that every request is authenticated, the
// caller holds at most MaxInFlightPerUser requests in flight and all
// callers together MaxInFlight, each request ends its queries by
// QueryTimeout, and next finds the caller with userOf.
func (h *handler) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := authenticate(h.Authenticator, w, r)
		if u == nil {
			return
		}
		release, ok := h.inFlight.acquire(u.GetName())
		if !ok {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
				fmt.Sprintf("user %q has %d requests in flight, the most the API serves at once for one user", u.GetName(), h.MaxInFlightPerUser))
			return
		}
		defer release()
		select {
		case h.slots <- struct{}{}:
			defer func() { <-h.slots }()
		default:
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
				fmt.Sprintf("the API has %d requests in flight, the most it serves at once for all users together", h.MaxInFlight))
			return
		}
		ctx, cancel := context.WithTimeout(genericapirequest.WithUser(r.Context(), u), h.QueryTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// userOf returns the caller that authenticated put in r's context.
func userOf(r *http.Request) user.Info {
	u, _ := genericapirequest.UserFrom(r.Context())
	return u
}

// perUserLimit counts each user's requests in flight.
type perUserLimit struct {
	max      int
	mu       sync.Mutex
	inFlight map[string]int
}

func newPerUserLimit(max int) *perUserLimit {
	return &perUserLimit{max: max, inFlight: map[string]int{}}
}

// acquire takes one of name's slots; ok is false when it has none left.
func (l *perUserLimit) acquire(name string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[name] >= l.max {
		return nil, false
	}
	l.inFlight[name]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.inFlight[name]--; l.inFlight[name] == 0 {
			delete(l.inFlight, name)
		}
	}, true
}

// authenticate returns the caller, or writes 401 and returns nil.
func authenticate(authn authenticator.Request, w http.ResponseWriter, r *http.Request) user.Info {
	resp, ok, err := authn.AuthenticateRequest(r)
	if err != nil {
		klog.FromContext(r.Context()).V(4).Info("Authentication failed", "err", err)
	}
	// The delegated authenticator admits requests without credentials as
	// system:anonymous; the API answers them 401, as a request that must
	// name its caller.
	if err != nil || !ok || resp == nil || resp.User == nil || resp.User.GetName() == user.Anonymous {
		writeError(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "the request carries no valid credentials")
		return nil
	}
	return resp.User
}

// authorize returns whether attrs are allowed, writing 403 (or 500 when the
// authorizer failed) when not.
func authorize(ctx context.Context, authz authorizer.UnconditionalAuthorizer, w http.ResponseWriter, attrs authorizer.Attributes) bool {
	decision, reason, err := authz.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return true
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Authorization failed", "user", attrs.GetUser().GetName())
		writeError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "authorization failed")
		return false
	}
	msg := forbiddenMessage(attrs)
	if reason != "" {
		msg += ": " + reason
	}
	writeError(w, http.StatusForbidden, metav1.StatusReasonForbidden, msg)
	return false
}

func forbiddenMessage(a authorizer.Attributes) string {
	if !a.IsResourceRequest() {
		return fmt.Sprintf("user %q cannot %s path %q", a.GetUser().GetName(), a.GetVerb(), a.GetPath())
	}
	switch {
	case a.GetName() != "":
		return fmt.Sprintf("user %q cannot %s %s %q in namespace %q", a.GetUser().GetName(), a.GetVerb(), a.GetResource(), a.GetName(), a.GetNamespace())
	case a.GetNamespace() != "":
		return fmt.Sprintf("user %q cannot %s %s in namespace %q", a.GetUser().GetName(), a.GetVerb(), a.GetResource(), a.GetNamespace())
	default:
		return fmt.Sprintf("user %q cannot %s %s at the cluster scope", a.GetUser().GetName(), a.GetVerb(), a.GetResource())
	}
}

// podAttributes are the attributes of verb on pods (name may be empty).
func podAttributes(u user.Info, verb, namespace, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User: u, Verb: verb, Namespace: namespace, APIGroup: "", APIVersion: "v1",
		Resource: "pods", Name: name, ResourceRequest: true,
	}
}

// nodeListAttributes are the attributes of listing nodes: the right that
// node names, per-node verdicts and scores need.
func nodeListAttributes(u user.Info) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: "list", APIGroup: "", APIVersion: "v1", Resource: "nodes", ResourceRequest: true}
}

// allowed returns whether attrs are allowed; an error means the authorizer
// failed and nothing was decided.
func allowed(ctx context.Context, authz authorizer.UnconditionalAuthorizer, attrs authorizer.Attributes) (bool, error) {
	decision, _, err := authz.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("authorizing %s: %w", forbiddenMessage(attrs), err)
	}
	return false, nil
}

// statusAttributes are the attributes of reading the follower's status: get
// on the API group's status resource, the right the kube-apiserver checks
// before it proxies the request on the aggregated path.
func statusAttributes(u user.Info) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: "get", APIGroup: v1alpha1.GroupName, APIVersion: v1alpha1.Version, Resource: "status", ResourceRequest: true}
}

func pathAttributes(u user.Info, r *http.Request) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: "get", Path: r.URL.Path}
}

// WithNonResourceAuth wraps h so that callers must be authenticated and
// allowed to get the request's path (a non-resource URL), like the /metrics
// endpoint of Kubernetes components.
func WithNonResourceAuth(h http.Handler, authn authenticator.Request, authz authorizer.UnconditionalAuthorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := authenticate(authn, w, r)
		if u == nil {
			return
		}
		if !authorize(r.Context(), authz, w, pathAttributes(u, r)) {
			return
		}
		h.ServeHTTP(w, r)
	})
}

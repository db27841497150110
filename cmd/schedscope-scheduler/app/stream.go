package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"

	"github.com/schedscope/schedscope/pkg/stream"
)

// streamMaxConnections caps the record stream's readers: over plain HTTP
// its open connections, over TLS its authorized requests in flight;
// further ones wait. Each answer holds at most stream.MaxAnswerBytes of
// records while it writes them.
const streamMaxConnections = 16

// streamShutdownTimeout bounds how long the TLS stream waits for its
// requests to end when the scheduler stops.
const streamShutdownTimeout = 5 * time.Second

// serveStream serves the record stream h at o.BindAddress until ctx ends;
// an empty address serves nothing. With o.AllowRemote the stream is served
// over TLS with the secure port's serving certificate, and every request is
// authenticated and authorized as the secure port's are (withStreamAuth);
// without, it is plain HTTP with no authentication, for readers on
// loopback.
func serveStream(ctx context.Context, o *RecordOptions, cc *schedulerserverconfig.CompletedConfig, h http.Handler) error {
	if o.BindAddress == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle(stream.Path, h)
	var secured http.Handler
	if o.AllowRemote {
		if cc.SecureServing == nil {
			return errors.New("--record-stream-allow-remote: the stream is served with the secure port's certificate and authentication, which --secure-port=0 disables")
		}
		var err error
		if secured, err = withStreamAuth(mux, cc.Authentication.Authenticator, cc.Authorization.Authorizer); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.BindAddress)
	if err != nil {
		return fmt.Errorf("--record-stream-address: %w", err)
	}
	logger := klog.FromContext(ctx)
	if secured != nil {
		// The secure port's certificates, TLS settings and client CA, on
		// the stream's own listener. No connection cap: callers that
		// cannot read the stream must not take the readers' places.
		serving := *cc.SecureServing
		serving.Listener = ln
		if _, _, err := serving.Serve(secured, streamShutdownTimeout, ctx.Done()); err != nil {
			_ = ln.Close()
			return fmt.Errorf("--record-stream-allow-remote: serving the stream over TLS: %w", err)
		}
		logger.Info("Serving the record stream over TLS to authenticated and authorized readers", "address", ln.Addr().String(), "path", stream.Path)
		return nil
	}
	// Readers are the sidecar and tools: a few connections, each one
	// bounded in time and in header size (the stream bounds its writes).
	ln = netutil.LimitListener(ln, streamMaxConnections)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Record stream stopped")
		}
	}()
	logger.Info("Serving the record stream", "address", ln.Addr().String(), "path", stream.Path)
	return nil
}

// withStreamAuth wraps h with the secure port's filters: every request is
// authenticated by authn and authorized by authz as a non-resource request
// (get on the path /v1/records, as /metrics is), and at most
// streamMaxConnections authorized requests are in flight. A caller without
// credentials gets 401, although the delegated authenticator admits it as
// system:anonymous: a reader of the stream must be known. Refusals are
// Status objects with a message and hold nothing of the stream.
func withStreamAuth(h http.Handler, authn authenticator.Request, authz authorizer.Authorizer) (http.Handler, error) {
	if authn == nil || authz == nil {
		return nil, errors.New("--record-stream-allow-remote: the secure port has no authenticator or authorizer to check the stream's readers")
	}
	// Only authorized requests take a slot. Over TLS a connection carries
	// many requests (HTTP/2), so requests are counted, not connections.
	h = limitInFlight(h, streamMaxConnections)
	h = genericapifilters.WithAuthorization(h, authz, scheme.Codecs)
	h = genericapifilters.WithAuthentication(h, namedCallers(authn), genericapifilters.Unauthorized(scheme.Codecs), nil, nil)
	// Without API prefixes every path is a non-resource URL.
	h = genericapifilters.WithRequestInfo(h, &apirequest.RequestInfoFactory{})
	return h, nil
}

// namedCallers is authn refusing system:anonymous, whom the delegated
// authenticator admits when a request carries no credentials.
func namedCallers(authn authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := authn.AuthenticateRequest(r)
		if ok && (resp == nil || resp.User == nil || resp.User.GetName() == user.Anonymous) {
			return nil, false, err
		}
		return resp, ok, err
	})
}

// limitInFlight serves at most n requests of h at once; further ones wait
// for a slot as long as their callers do.
func limitInFlight(h http.Handler, n int) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			h.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	})
}

package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/sidecar/api"
	"github.com/schedscope/schedscope/pkg/sidecar/clustermetrics"
	"github.com/schedscope/schedscope/pkg/sidecar/follow"
	"github.com/schedscope/schedscope/pkg/sidecar/hints"
	"github.com/schedscope/schedscope/pkg/sidecar/metrics"
	"github.com/schedscope/schedscope/pkg/sidecar/namespaces"
	"github.com/schedscope/schedscope/pkg/sidecar/podcheck"
	"github.com/schedscope/schedscope/pkg/sidecar/probe"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/web"
)

// NewCommand returns the schedscope-sidecar command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "schedscope-sidecar",
		Short: "Keeps the scheduler's decision records and explains them",
		Long: `schedscope-sidecar follows the scheduler's decision record stream into an
embedded database and serves the explain API, a web page and scheduling
health metrics, behind Kubernetes delegated authentication and authorization.`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments %q", args)
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	for _, f := range o.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	return cmd
}

// Run runs the sidecar until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	st, err := o.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The sidecar's own metrics carry its cluster's name, when it has one.
	var sreg prometheus.Registerer = reg
	if o.ClusterName != "" {
		sreg = prometheus.WrapRegistererWith(prometheus.Labels{"cluster": o.ClusterName}, reg)
	}
	m := metrics.NewMetrics(sreg)
	f, err := o.follower(st, m)
	if err != nil {
		return err
	}
	servingInfo, authn, authz, err := o.serving()
	if err != nil {
		return err
	}
	apiConfig := api.Config{
		Store: st, Authenticator: authn.Authenticator, Authorizer: authz.Authorizer,
		TraceURL: o.traceLink(), MaxInFlightPerUser: o.MaxInFlightPerUser, MaxInFlight: o.MaxInFlight,
		QueryTimeout: o.QueryTimeout, MaxRejectionsWindow: o.MaxRejectionsWindow, Cluster: o.ClusterName,
		AllClusters: o.ServeAllClusters,
	}
	if f != nil {
		apiConfig.Status = f.Status
	}
	if o.ClusterHealth {
		factory, hs, err := o.watchCluster(ctx, st, sreg)
		if err != nil {
			return err
		}
		defer factory.Shutdown()
		apiConfig.StillPending = podcheck.StillPending(factory.Core().V1().Pods())
		apiConfig.SchedulerName = podcheck.SchedulerName(factory.Core().V1().Pods())
		apiConfig.Hints = hs.For
	}
	mux, err := o.handler(st, apiConfig, reg)
	if err != nil {
		return err
	}
	prober, err := o.prober(m)
	if err != nil {
		return err
	}
	stoppedCh, _, err := servingInfo.Serve(mux, 10*time.Second, ctx.Done())
	if err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	logger.Info("Serving", "address", servingInfo.Listener.Addr().String(), "cluster", o.ClusterName, "follow", o.Follow, "stream", o.StreamURL, "store", storeDisplay(o.Store))

	done := make(chan struct{})
	go func() {
		defer close(done)
		if f == nil {
			return
		}
		if err := f.Run(ctx); err != nil {
			logger.Error(err, "Following the record stream stopped")
			cancel()
		}
	}()
	go prober.Run(ctx)
	go wait.UntilWithContext(ctx, func(ctx context.Context) { maintain(ctx, st, m, o.Follow) }, o.PruneInterval)

	<-ctx.Done()
	<-done
	<-stoppedCh
	return nil
}

// follower returns the follower of the record stream into st, or nil
// with --follow=false.
func (o *Options) follower(st store.Store, m *metrics.Metrics) (*follow.Follower, error) {
	if !o.Follow {
		return nil, nil
	}
	opts := follow.DefaultOptions(o.StreamURL)
	opts.TokenFile = o.StreamTokenFile
	var err error
	if opts.Client, err = o.streamClient(); err != nil {
		return nil, err
	}
	f, err := follow.New(opts, st, m)
	if err != nil {
		return nil, fmt.Errorf("--stream-url: %w", err)
	}
	return f, nil
}

// serving returns where and to whom the sidecar serves: its TLS listener
// and the delegated authentication and authorization.
func (o *Options) serving() (*server.SecureServingInfo, *server.AuthenticationInfo, *server.AuthorizationInfo, error) {
	var servingInfo *server.SecureServingInfo
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, nil, nil, fmt.Errorf("creating a self-signed serving certificate: %w", err)
	}
	if err := o.SecureServing.ApplyTo(&servingInfo); err != nil {
		return nil, nil, nil, fmt.Errorf("secure serving: %w", err)
	}
	if servingInfo == nil {
		return nil, nil, nil, fmt.Errorf("--secure-port 0 disables serving; the sidecar has nothing to do without it")
	}
	var authn server.AuthenticationInfo
	if err := o.Authentication.ApplyTo(&authn, servingInfo, nil); err != nil {
		return nil, nil, nil, fmt.Errorf("delegated authentication: %w", err)
	}
	var authz server.AuthorizationInfo
	if err := o.Authorization.ApplyTo(&authz); err != nil {
		return nil, nil, nil, fmt.Errorf("delegated authorization: %w", err)
	}
	return servingInfo, &authn, &authz, nil
}

// watchCluster starts the informers behind the cluster metrics, the
// pending list's check, the hints and the deletion of deleted namespaces'
// records, until ctx ends; the caller shuts the factory down.
func (o *Options) watchCluster(ctx context.Context, st store.Store, reg prometheus.Registerer) (informers.SharedInformerFactory, *hints.Source, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	if _, err := clustermetrics.NewCluster(factory, reg, clock.RealClock{}); err != nil {
		return nil, nil, err
	}
	if err := namespaces.Forget(ctx, factory.Core().V1().Namespaces(), client.CoreV1(), st); err != nil {
		return nil, nil, err
	}
	// The pending-pod check's and the hints' informers and index must
	// exist before Start.
	hs, err := hints.NewSource(factory.Core().V1().Pods(), factory.Core().V1().Nodes())
	if err != nil {
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	return factory, hs, nil
}

// handler serves the health endpoints, the metrics, the explain API with
// its discovery documents, and the web page.
func (o *Options) handler(st store.Store, apiConfig api.Config, reg *prometheus.Registry) (http.Handler, error) {
	apiHandler, err := api.New(apiConfig)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.Handle("/healthz", ok)
	mux.Handle("/livez", ok)
	mux.Handle("/readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := st.Cursor(r.Context()); err != nil {
			// The answer is open to anyone; the error goes to the log only.
			klog.FromContext(r.Context()).Error(err, "Not ready: the store does not answer")
			http.Error(w, "store not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	mux.Handle("/metrics", api.WithNonResourceAuth(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), apiConfig.Authenticator, apiConfig.Authorizer))
	mux.Handle(v1alpha1.Prefix, apiHandler)
	api.RegisterDiscovery(mux)
	page := web.Handler(web.Config{TraceURLTemplate: o.traceLink()})
	mux.Handle("/", page)
	// The page also under the API's path, where the kube-apiserver's
	// aggregator (and so kubectl proxy) reaches it with the caller's
	// credentials.
	mux.Handle(v1alpha1.UIPath, http.StripPrefix(strings.TrimSuffix(v1alpha1.UIPath, "/"), page))
	return mux, nil
}

// prober probes the scheduler's health endpoints the flags name.
func (o *Options) prober(m *metrics.Metrics) (*probe.Prober, error) {
	client, err := o.probeClient()
	if err != nil {
		return nil, err
	}
	urls := map[string]string{}
	if o.SchedulerHealthURL != "" {
		urls[metrics.ProbeLiveness] = o.SchedulerHealthURL
	}
	if o.SchedulerReadyURL != "" {
		urls[metrics.ProbeReadiness] = o.SchedulerReadyURL
	}
	return &probe.Prober{URLs: urls, Client: client, Interval: o.ProbeInterval, Metrics: m}, nil
}

// maintain applies retention, when prune is set, and refreshes the store
// metrics. Processes that only serve leave retention to the writers, so
// that the retention flags of the sidecars beside the schedulers rule.
func maintain(ctx context.Context, st store.Store, m *metrics.Metrics, prune bool) {
	logger := klog.FromContext(ctx)
	if prune {
		if n, err := st.Prune(ctx, time.Now()); err != nil {
			logger.Error(err, "Applying retention")
		} else if n > 0 {
			logger.V(2).Info("Applied retention", "removed", n)
		}
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		logger.Error(err, "Reading store statistics")
		return
	}
	m.StoreAttempts.Set(float64(stats.Attempts))
	m.StoreBytes.Set(float64(stats.Bytes))
	m.StoreDiskBytes.Set(float64(stats.DiskBytes))
}

func (o *Options) probeClient() (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.SchedulerCAFile == "" {
		// Like the kubelet's HTTPS probes: the scheduler's default serving
		// certificate is self-signed.
		tlsConfig.InsecureSkipVerify = true //nolint:gosec // health probe only
	} else {
		pool, err := loadCAFile("scheduler-ca-file", o.SchedulerCAFile)
		if err != nil {
			return nil, err
		}
		tlsConfig.RootCAs = pool
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: o.ProbeInterval}, nil
}

// streamClient is the client of the record stream: nil (the follower's
// default, verifying with the system roots) without --stream-ca-file; with
// it, a client with no overall timeout, since watches are long, verifying
// the stream's certificate with that CA.
func (o *Options) streamClient() (*http.Client, error) {
	if o.StreamCAFile == "" {
		return nil, nil
	}
	pool, err := loadCAFile("stream-ca-file", o.StreamCAFile)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	return &http.Client{Transport: transport}, nil
}

// loadCAFile reads the PEM certificates in path, given by --flag.
func loadCAFile(flag, path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--%s %q holds no PEM certificate", flag, path)
	}
	return pool, nil
}

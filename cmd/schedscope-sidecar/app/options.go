package app

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/schedscope/schedscope/pkg/sidecar/api"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
)

// Defaults.
const (
	DefaultStreamURL     = "http://127.0.0.1:10262/v1/records"
	DefaultSecurePort    = 10263
	DefaultSchedulerBase = "https://127.0.0.1:10259"
	DefaultStore         = "sqlite:///var/lib/schedscope/records.db"
)

// Options are the sidecar's options.
type Options struct {
	// Follow runs the follower; without it the sidecar only serves what
	// the store holds (the API as a Deployment of its own).
	Follow bool
	// StreamURL is the scheduler's record stream.
	StreamURL string
	// StreamTokenFile holds the bearer token sent to an https stream, read
	// again on each (re)connection; empty sends none.
	StreamTokenFile string
	// StreamCAFile verifies an https stream's certificate; empty means the
	// system roots.
	StreamCAFile string
	// Store is where the records are kept: sqlite:///PATH (a SQLite
	// database file) or a postgres:// URL.
	Store string
	// PostgresAllowInsecure accepts a PostgreSQL store off this machine
	// reached without verifying the server's certificate.
	PostgresAllowInsecure bool
	// ClusterName names the cluster whose scheduler the sidecar follows:
	// its records, cursor and metrics carry it. Empty is the unnamed
	// cluster.
	ClusterName string
	// ServeAllClusters makes the API and the page answer for every cluster
	// of the store, not only for ClusterName.
	ServeAllClusters bool
	// DBPath is the deprecated --db-path: --store=sqlite:///DBPath.
	DBPath    string
	Retention store.Retention
	// PruneInterval is how often retention is applied.
	PruneInterval time.Duration
	// TraceURL is the Jaeger UI's base URL, linked from the page as
	// <TraceURL>/trace/<traceID>.
	TraceURL string
	// TraceURLTemplate is the trace viewer's link (Jaeger, Tempo, Grafana),
	// {traceID} standing for a trace's ID; it replaces TraceURL.
	TraceURLTemplate string
	// MaxInFlightPerUser bounds each caller's concurrent API requests.
	MaxInFlightPerUser int
	// MaxInFlight bounds all callers' concurrent API requests together.
	MaxInFlight int
	// QueryTimeout is each API request's deadline.
	QueryTimeout time.Duration
	// MaxRejectionsWindow bounds the window the API counts rejections
	// over.
	MaxRejectionsWindow time.Duration
	// StoreMaxReadConns bounds the store connections the API's queries
	// use; the follower and retention have their own.
	StoreMaxReadConns int
	// SchedulerHealthURL and SchedulerReadyURL are probed for the
	// scheduler_up metric; empty disables a probe.
	SchedulerHealthURL string
	SchedulerReadyURL  string
	ProbeInterval      time.Duration
	// SchedulerCAFile verifies the scheduler's serving certificate; empty
	// means the probe does not verify it, as the kubelet's HTTPS probes.
	SchedulerCAFile string
	// Kubeconfig is used for the informers; empty means in-cluster.
	Kubeconfig string
	// ClusterHealth enables the informers behind the cluster metrics.
	ClusterHealth bool

	SecureServing  *apiserveroptions.SecureServingOptions
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	Authorization  *apiserveroptions.DelegatingAuthorizationOptions
}

// NewOptions returns the default options.
func NewOptions() *Options {
	o := &Options{
		Follow:              true,
		StreamURL:           DefaultStreamURL,
		Store:               DefaultStore,
		Retention:           store.Retention{MaxAge: 7 * 24 * time.Hour, MaxAttempts: 1_000_000, MaxAttemptsPerNamespace: 100_000, MaxDiskBytes: 2 << 30},
		PruneInterval:       time.Minute,
		SchedulerHealthURL:  DefaultSchedulerBase + "/healthz",
		SchedulerReadyURL:   DefaultSchedulerBase + "/readyz",
		ProbeInterval:       10 * time.Second,
		ClusterHealth:       true,
		MaxInFlightPerUser:  api.DefaultMaxInFlightPerUser,
		MaxInFlight:         api.DefaultMaxInFlight,
		QueryTimeout:        api.DefaultQueryTimeout,
		MaxRejectionsWindow: api.DefaultMaxRejectionsWindow,
		StoreMaxReadConns:   store.DefaultMaxReadConns,
		SecureServing:       apiserveroptions.NewSecureServingOptions(),
		Authentication:      apiserveroptions.NewDelegatingAuthenticationOptions(),
		Authorization:       apiserveroptions.NewDelegatingAuthorizationOptions(),
	}
	o.SecureServing.BindPort = DefaultSecurePort
	o.SecureServing.ServerCert.CertDirectory = ""
	o.SecureServing.ServerCert.PairName = "schedscope-sidecar"
	o.Authorization.AlwaysAllowPaths = []string{"/healthz", "/readyz", "/livez"}
	return o
}

// Flags returns the flags, in named sets.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("sidecar")
	fs.BoolVar(&o.Follow, "follow", o.Follow, "Follow the scheduler's record stream into the store. With --follow=false the process only serves the API, the page and the metrics of what the store holds: several such replicas can serve one PostgreSQL store that sidecars beside the schedulers write.")
	fs.StringVar(&o.StreamURL, "stream-url", o.StreamURL, "The scheduler's decision record stream.")
	fs.StringVar(&o.StreamTokenFile, "stream-token-file", o.StreamTokenFile, "File holding a bearer token sent to the record stream, read again on each (re)connection so that a rotated token is used; in a pod, /var/run/secrets/kubernetes.io/serviceaccount/token. Needs an https --stream-url. Empty sends none.")
	fs.StringVar(&o.StreamCAFile, "stream-ca-file", o.StreamCAFile, "CA bundle (PEM) verifying the certificate of an https --stream-url; empty means the system roots.")
	fs.StringVar(&o.Store, "store", o.Store, "Where the records are kept: sqlite:///PATH, a SQLite database file created if missing (its directory must exist), or a PostgreSQL URL postgres://USER@HOST:PORT/DATABASE?sslmode=verify-full (libpq's parameters; the password from the PGPASSWORD environment variable or a .pgpass file, not the URL, so that it stays out of the process list), which several sidecars and API servers may share.")
	fs.BoolVar(&o.PostgresAllowInsecure, "postgres-allow-insecure", o.PostgresAllowInsecure, "Accept a PostgreSQL --store on a host other than localhost, a loopback address or a Unix socket with an sslmode other than verify-full or verify-ca: without TLS, or with TLS that does not verify the server. Off, such a store is refused at start.")
	fs.StringVar(&o.ClusterName, "cluster-name", o.ClusterName, "The name of the cluster whose scheduler this sidecar follows, a DNS-1123 label (e.g. east): its records, its cursor in the stream and its schedscope_* metrics (label cluster) carry it, and its retention and namespace deletion touch only its records, so that the sidecars of several clusters can write one PostgreSQL store. Empty (the default) is the unnamed cluster of a single-cluster setup, which records stored before clusters were named belong to.")
	fs.BoolVar(&o.ServeAllClusters, "serve-all-clusters", o.ServeAllClusters, "Answer the explain API and the page for every cluster whose sidecar writes the store, not only for --cluster-name's. Every request is still authorized by this cluster's kube-apiserver only, so grant it only where an identity's rights in this cluster are meant to hold in every cluster of the store (a central, operators-only API); off, a request naming another cluster is answered 404 and no other cluster's record is read.")
	fs.StringVar(&o.DBPath, "db-path", o.DBPath, "The SQLite database file holding the records; the same as --store=sqlite:///PATH.")
	_ = fs.MarkDeprecated("db-path", "use --store=sqlite:///PATH")
	fs.DurationVar(&o.Retention.MaxAge, "retention-max-age", o.Retention.MaxAge, "Delete attempts older than this; 0 keeps them regardless of age.")
	fs.Int64Var(&o.Retention.MaxAttempts, "retention-max-attempts", o.Retention.MaxAttempts, "Keep at most this many attempts, deleting the oldest of the namespaces over their fair share (a namespace under it keeps all its attempts, the others split the rest); 0 means no bound.")
	fs.Int64Var(&o.Retention.MaxAttemptsPerNamespace, "retention-max-attempts-per-namespace", o.Retention.MaxAttemptsPerNamespace, "Keep at most this many attempts of each namespace, deleting its oldest; at most --retention-max-bytes / 19088 (a busy cluster's attempt on disk) when that is set; 0 means no bound.")
	fs.Int64Var(&o.Retention.MaxDiskBytes, "retention-max-bytes", o.Retention.MaxDiskBytes, "Keep the store's files on disk (records, indexes and write-ahead log) under this many bytes, deleting the oldest attempts of the namespaces over their fair share (a namespace under it keeps all its attempts, the others split the rest); 0 means no bound. Leave room below the volume's size limit.")
	fs.DurationVar(&o.Retention.RemoveSilentClustersAfter, "retention-remove-silent-clusters-after", o.Retention.RemoveSilentClustersAfter, "Delete every record of another cluster of the store (several clusters' sidecars writing one PostgreSQL database) whose sidecar has applied no retention for this long: a cluster that is gone. Every sidecar notes when it applies retention (--retention-interval), whatever this flag says; 0 keeps other clusters' records.")
	fs.DurationVar(&o.PruneInterval, "retention-interval", o.PruneInterval, "How often retention is applied.")
	fs.IntVar(&o.MaxInFlightPerUser, "max-requests-in-flight-per-user", o.MaxInFlightPerUser, "Requests one caller may have in flight at once; more are answered 429 with Retry-After.")
	fs.IntVar(&o.MaxInFlight, "max-requests-in-flight", o.MaxInFlight, "API requests of all callers together in flight at once; more are answered 429 with Retry-After.")
	fs.DurationVar(&o.QueryTimeout, "query-timeout", o.QueryTimeout, "Each API request's deadline: a store query running past it is stopped and answered 503, saying how to narrow the query. On PostgreSQL the API's connections also have a statement_timeout a tenth shorter.")
	fs.DurationVar(&o.MaxRejectionsWindow, "max-rejections-window", o.MaxRejectionsWindow, "The longest window the API counts rejections over; a longer one is answered 422.")
	fs.IntVar(&o.StoreMaxReadConns, "store-max-read-connections", o.StoreMaxReadConns, "Store connections the API's queries share; the follower and retention have connections of their own, so that ingest never waits behind the API.")
	fs.StringVar(&o.TraceURL, "jaeger-url", o.TraceURL, "Base URL of the Jaeger UI; the page links each attempt to <jaeger-url>/trace/<traceID>. Empty hides the links.")
	fs.StringVar(&o.TraceURLTemplate, "trace-url-template", o.TraceURLTemplate, "The page's link to an attempt's trace in any viewer (Jaeger, Tempo, Grafana), {traceID} standing for the trace's ID, e.g. https://grafana.example/explore?left=...{traceID}...; instead of --jaeger-url.")
	fs.StringVar(&o.SchedulerHealthURL, "scheduler-health-url", o.SchedulerHealthURL, "The scheduler's liveness endpoint, probed for schedscope_scheduler_up{probe=\"liveness\"}; empty disables the probe.")
	fs.StringVar(&o.SchedulerReadyURL, "scheduler-ready-url", o.SchedulerReadyURL, "The scheduler's readiness endpoint, probed for schedscope_scheduler_up{probe=\"readiness\"}; empty disables the probe.")
	fs.DurationVar(&o.ProbeInterval, "scheduler-probe-interval", o.ProbeInterval, "How often the scheduler's health endpoints are probed.")
	fs.StringVar(&o.SchedulerCAFile, "scheduler-ca-file", o.SchedulerCAFile, "CA bundle verifying the scheduler's serving certificate; empty skips verification of the probe.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig for the pod, node and event informers; empty means in-cluster configuration.")
	fs.BoolVar(&o.ClusterHealth, "cluster-health", o.ClusterHealth, "Watch pods, nodes, namespaces and events: the cluster scheduling health metrics, the pending list's check, the hints of the explain API and the deletion of deleted namespaces' records.")
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	o.Authorization.AddFlags(fss.FlagSet("authorization"))
	return fss
}

// AddFlags adds every flag to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	for _, f := range o.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
}

func validateURL(flag, raw string, allowEmpty bool) error {
	if raw == "" {
		if allowEmpty {
			return nil
		}
		return fmt.Errorf("--%s is required", flag)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--%s %q: %w", flag, raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("--%s %q: the scheme must be http or https", flag, raw)
	}
	if u.Host == "" {
		return fmt.Errorf("--%s %q: no host", flag, raw)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil && u.Port() != "" {
		return fmt.Errorf("--%s %q: %w", flag, raw, err)
	}
	return nil
}

// traceIDPlaceholder stands for a trace's ID in --trace-url-template.
const traceIDPlaceholder = "{traceID}"

// traceLink is the trace viewer's link, {traceID} standing for the ID;
// empty when no viewer is set.
func (o *Options) traceLink() string {
	if o.TraceURLTemplate != "" || o.TraceURL == "" {
		return o.TraceURLTemplate
	}
	return strings.TrimSuffix(o.TraceURL, "/") + "/trace/" + traceIDPlaceholder
}

// Validate checks the options, every error naming its flag, and turns a
// --db-path into its --store.
func (o *Options) Validate() error {
	var errs []error
	for _, u := range []struct {
		flag, value string
		allowEmpty  bool
	}{
		{"stream-url", o.StreamURL, false},
		{"jaeger-url", o.TraceURL, true},
		{"scheduler-health-url", o.SchedulerHealthURL, true},
		{"scheduler-ready-url", o.SchedulerReadyURL, true},
	} {
		if err := validateURL(u.flag, u.value, u.allowEmpty); err != nil {
			errs = append(errs, err)
		}
	}
	if o.TraceURLTemplate != "" {
		switch {
		case o.TraceURL != "":
			errs = append(errs, errors.New("--trace-url-template and --jaeger-url both set: give one"))
		case !strings.Contains(o.TraceURLTemplate, traceIDPlaceholder):
			errs = append(errs, fmt.Errorf("--trace-url-template %q: has no %s", o.TraceURLTemplate, traceIDPlaceholder))
		default:
			if err := validateURL("trace-url-template", strings.ReplaceAll(o.TraceURLTemplate, traceIDPlaceholder, "0"), false); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if o.StreamTokenFile != "" {
		if u, err := url.Parse(o.StreamURL); err == nil && u.Scheme != "https" {
			errs = append(errs, fmt.Errorf("--stream-token-file: a token is sent over https only, and --stream-url %q is not https", o.StreamURL))
		}
		if _, err := os.Stat(o.StreamTokenFile); err != nil {
			errs = append(errs, fmt.Errorf("--stream-token-file: %w", err))
		}
	}
	if o.StreamCAFile != "" {
		if _, err := os.Stat(o.StreamCAFile); err != nil {
			errs = append(errs, fmt.Errorf("--stream-ca-file: %w", err))
		}
	}
	if o.DBPath != "" {
		if o.Store != DefaultStore {
			errs = append(errs, errors.New("--db-path is the old form of --store=sqlite:///PATH: give only --store"))
		} else if path, err := filepath.Abs(o.DBPath); err != nil {
			errs = append(errs, fmt.Errorf("--db-path %q: %w", o.DBPath, err))
		} else {
			o.Store = "sqlite://" + path
		}
	}
	if loc, err := parseStore(o.Store); err != nil {
		errs = append(errs, err)
	} else if err := loc.checkPostgresTLS(o.PostgresAllowInsecure); err != nil {
		errs = append(errs, err)
	}
	if err := store.ValidateClusterName(o.ClusterName); err != nil {
		errs = append(errs, fmt.Errorf("--cluster-name: %w", err))
	}
	if o.Retention.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("--retention-max-age %v must not be negative", o.Retention.MaxAge))
	}
	if o.Retention.RemoveSilentClustersAfter < 0 {
		errs = append(errs, fmt.Errorf("--retention-remove-silent-clusters-after %v must not be negative", o.Retention.RemoveSilentClustersAfter))
	}
	if o.Retention.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("--retention-max-attempts %d must not be negative", o.Retention.MaxAttempts))
	}
	if o.Retention.MaxAttemptsPerNamespace < 0 {
		errs = append(errs, fmt.Errorf("--retention-max-attempts-per-namespace %d must not be negative", o.Retention.MaxAttemptsPerNamespace))
	}
	if o.Retention.MaxDiskBytes < 0 {
		errs = append(errs, fmt.Errorf("--retention-max-bytes %d must not be negative", o.Retention.MaxDiskBytes))
	}
	if r := o.Retention; r.MaxDiskBytes > 0 && r.MaxAttemptsPerNamespace > r.MaxDiskBytes/store.BusyAttemptBytes {
		errs = append(errs, fmt.Errorf("--retention-max-attempts-per-namespace %d does not fit --retention-max-bytes %d: at %d bytes on disk per attempt of a busy cluster, at most %d attempts do; set at most that, or 0 to leave each namespace to its fair share of the bytes",
			r.MaxAttemptsPerNamespace, r.MaxDiskBytes, store.BusyAttemptBytes, r.MaxDiskBytes/store.BusyAttemptBytes))
	}
	for _, limit := range []struct {
		flag  string
		value int
	}{
		{"max-requests-in-flight-per-user", o.MaxInFlightPerUser},
		{"max-requests-in-flight", o.MaxInFlight},
		{"store-max-read-connections", o.StoreMaxReadConns},
	} {
		if limit.value < 1 {
			errs = append(errs, fmt.Errorf("--%s %d must be at least 1", limit.flag, limit.value))
		}
	}
	if o.QueryTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--query-timeout %v must be positive", o.QueryTimeout))
	}
	if o.MaxRejectionsWindow <= 0 {
		errs = append(errs, fmt.Errorf("--max-rejections-window %v must be positive", o.MaxRejectionsWindow))
	}
	if o.PruneInterval <= 0 {
		errs = append(errs, fmt.Errorf("--retention-interval %v must be positive", o.PruneInterval))
	}
	if o.ProbeInterval <= 0 {
		errs = append(errs, fmt.Errorf("--scheduler-probe-interval %v must be positive", o.ProbeInterval))
	}
	if o.SchedulerCAFile != "" {
		if _, err := os.Stat(o.SchedulerCAFile); err != nil {
			errs = append(errs, fmt.Errorf("--scheduler-ca-file: %w", err))
		}
	}
	if o.Kubeconfig != "" {
		if _, err := os.Stat(o.Kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--kubeconfig: %w", err))
		}
	}
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	return utilerrors.NewAggregate(errs)
}

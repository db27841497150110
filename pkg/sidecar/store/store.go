package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/stream"
)

// SchemaVersion is the version of the stored schema this build writes.
// Every store migrates databases of older versions to it, step by step
// through the same history, and refuses newer ones.
const SchemaVersion = 7

// ErrNotFound is returned when no stored attempt matches a query.
var ErrNotFound = errors.New("not found")

// ErrQueryTimeout is returned, wrapped, when a Reader's query ran past its
// context's deadline or the store's ReadLimits.Timeout.
var ErrQueryTimeout = errors.New("the query ran past its time limit")

// Writer is what the follower needs. A store writes the records of one
// cluster, the one it was opened for (Options.Cluster), with a cursor of
// that cluster's own.
type Writer interface {
	// Cursor returns the store's cluster's cursor (zero when the store has
	// none yet).
	Cursor(ctx context.Context) (v1alpha1.Cursor, error)
	// Append stores records and cursor, the store's cluster's, in one
	// transaction. Records already stored (same cluster, epoch and
	// sequence) are ignored. records may be
	// empty to store only the cursor.
	// records are the stream's: when a record's JSON is set its Attempt
	// may lack its Scores, as the store reads only the fields it indexes
	// from it and keeps the JSON.
	Append(ctx context.Context, cursor v1alpha1.Cursor, records []stream.Record) error
}

// Reader is what the explain API needs. Its queries answer for the store's
// own cluster (Options.Cluster) only, whatever cluster they name; with
// Options.AllClusters, for every cluster the store holds unless they name
// one.
type Reader interface {
	Cursor(ctx context.Context) (v1alpha1.Cursor, error)
	// Attempts returns the summaries of the attempts of a pod, newest first.
	Attempts(ctx context.Context, pod PodSelector, limit int) ([]v1alpha1.AttemptSummary, error)
	// Attempt returns the full record of one attempt of a pod, with its
	// sequence and trace (and no JSON); number 0 means the latest. It
	// returns ErrNotFound when there is none.
	Attempt(ctx context.Context, pod PodSelector, number int) (*stream.Record, error)
	// Pods returns pods by their latest attempt, newest first.
	Pods(ctx context.Context, opts PodListOptions) ([]v1alpha1.PodStatus, error)
	// Namespaces returns the namespaces of the store's cluster's pods.
	Namespaces(ctx context.Context) ([]string, error)
	// Rejections counts Filter rejections by plugin or by node.
	Rejections(ctx context.Context, q RejectionQuery) ([]v1alpha1.RejectionCount, error)
	// ShadowSummary counts a shadow profile's runs by outcome, from the
	// index of shadow runs the store writes with each attempt.
	ShadowSummary(ctx context.Context, q ShadowQuery) (v1alpha1.ShadowSummary, error)
	// ShadowOf returns the live profile that the shadow profile named
	// shadow shadows in cluster, as its latest stored run says; "" when
	// the store holds no run of it there.
	ShadowOf(ctx context.Context, cluster, shadow string) (string, error)
	// Stats describes the store's contents: the clusters it may read.
	Stats(ctx context.Context) (v1alpha1.StoreStats, error)
}

// Store is a place for decision records.
type Store interface {
	Writer
	Reader
	// Prune applies the retention policy to the store's cluster's
	// attempts, notes that the cluster's writer is alive at now, removes
	// the records of silent clusters (Retention.RemoveSilentClustersAfter)
	// and returns the number of attempts removed.
	Prune(ctx context.Context, now time.Time) (int, error)
	// DeleteNamespace removes every attempt of the pods of namespace in
	// the store's cluster, and returns how many it removed.
	DeleteNamespace(ctx context.Context, namespace string) (int, error)
	Close() error
}

// PodSelector names a pod either by UID or by namespace and name, in
// Cluster; an empty Cluster selects the pod in any cluster.
type PodSelector struct {
	Cluster   string
	Namespace string
	Name      string
	UID       string
}

// PodListOptions filters Pods.
type PodListOptions struct {
	// PendingOnly keeps the pods whose latest attempt did not schedule them.
	PendingOnly bool
	// Namespaces keeps the pods of these namespaces; nil means all.
	Namespaces []string
	// Cluster keeps the pods of this cluster; empty means every cluster.
	Cluster string
	// Limit bounds the result; 0 means no bound.
	Limit int
}

// Buckets returns the number of buckets of a query with a Step.
func (q RejectionQuery) Buckets() int {
	if q.Step <= 0 || q.Until.IsZero() || !q.Since.Before(q.Until) {
		return 0
	}
	return int((q.Until.Sub(q.Since) + q.Step - 1) / q.Step)
}

// RejectionQuery selects Filter rejections.
type RejectionQuery struct {
	// By is v1alpha1.ByPlugin or v1alpha1.ByNode.
	By string
	// Since and Until bound the attempts' finish time; zero means unbounded.
	Since, Until time.Time
	// Namespaces keeps the attempts of these namespaces; nil means all.
	Namespaces []string
	// Cluster keeps the attempts of this cluster; empty means every cluster.
	Cluster string
	// Limit bounds the result (largest counts first); 0 means no bound.
	Limit int
	// Step, when positive, also counts each key in buckets of Step from
	// Since to Until (both then required).
	Step time.Duration
}

// ShadowQuery selects a shadow profile's runs.
type ShadowQuery struct {
	// Shadow is the shadow profile's schedulerName.
	Shadow string
	// Since and Until bound the attempts' finish time; zero means unbounded.
	Since, Until time.Time
	// Namespaces keeps the runs of these namespaces' pods; nil means all.
	Namespaces []string
	// Cluster keeps the runs of this cluster; empty means every cluster.
	Cluster string
}

// Options configure a store.
type Options struct {
	// Cluster names the cluster whose records the store writes: they carry
	// it, the cursor is that cluster's own, and retention and
	// DeleteNamespace touch that cluster's records only. Empty is the
	// unnamed cluster, which every record stored before clusters were
	// named belongs to. See ValidateClusterName.
	Cluster string
	// AllClusters lets the Reader answer for every cluster in the store,
	// not only for Cluster: the sidecar's --serve-all-clusters.
	AllClusters bool
	Retention   Retention
	// Reads bound the Reader's share of the database.
	Reads ReadLimits
}

// DefaultMaxReadConns is ReadLimits.MaxConns's default.
const DefaultMaxReadConns = 4

// ReadLimits bound the Reader's queries. They run on connections of their
// own, at most MaxConns at once: the Writer, retention and DeleteNamespace
// have theirs, so that they never wait for a connection behind readers.
type ReadLimits struct {
	// MaxConns bounds the Reader's connections; 0 means
	// DefaultMaxReadConns.
	MaxConns int
	// Timeout, when positive, bounds each Reader query on the database
	// server too, where it has one (PostgreSQL's statement_timeout); every
	// store stops a query when its context ends.
	Timeout time.Duration
}

// Conns returns MaxConns, or its default.
func (l ReadLimits) Conns() int {
	if l.MaxConns > 0 {
		return l.MaxConns
	}
	return DefaultMaxReadConns
}

// ValidateClusterName checks a cluster name: empty (the unnamed cluster)
// or a DNS-1123 label, as Kubernetes names namespaces: at most 63
// lowercase letters, digits and '-', starting and ending with a letter or
// digit. The error says what is wrong with it.
func ValidateClusterName(name string) error {
	if name == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("cluster name %q is not a DNS-1123 label: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// Retention bounds what a store keeps of its cluster's records. Zero
// fields are unbounded. MaxAttempts and MaxDiskBytes are shared fairly
// among the cluster's namespaces: a namespace under its max-min fair share
// keeps every attempt, and the others keep their newest within it, so
// that no namespace's churn pushes the others' history out.
type Retention struct {
	MaxAge      time.Duration
	MaxAttempts int64
	// MaxAttemptsPerNamespace bounds each namespace's attempts.
	MaxAttemptsPerNamespace int64
	// MaxDiskBytes bounds the store's files on disk: records, indexes and
	// the write-ahead log.
	MaxDiskBytes int64
	// RemoveSilentClustersAfter, when positive, removes every record of
	// another cluster of the store whose writer has applied no retention
	// for that long: a cluster that is gone. Each writer notes when it
	// applies retention, whatever its policy.
	RemoveSilentClustersAfter time.Duration
}

// BusyAttemptBytes is what a busy cluster's attempt (5000 nodes, 3000
// rejected by three plugins) takes on disk in a SQLite store, indexes and
// write-ahead log included: the most of the workloads measured in
// docs/sidecar.md. A MaxAttemptsPerNamespace above MaxDiskBytes /
// BusyAttemptBytes lets one namespace alone reach the byte bound.
const BusyAttemptBytes = 19088

// Summarize returns the summary of a record of cluster's stream epoch.
func Summarize(r stream.Record, cluster, epoch string) v1alpha1.AttemptSummary {
	s := v1alpha1.ConvertSummary(r.Attempt)
	s.Cluster, s.Seq, s.Epoch, s.TraceID = cluster, r.Seq, epoch, r.TraceID
	return s
}

// ClusterCounts gathers the per-cluster counts a store reads from its
// tables into its Stats.
type ClusterCounts map[string]*v1alpha1.ClusterStoreStats

// Of returns cluster's counts, zero at first.
func (c ClusterCounts) Of(cluster string) *v1alpha1.ClusterStoreStats {
	s, ok := c[cluster]
	if !ok {
		s = &v1alpha1.ClusterStoreStats{Cluster: cluster}
		c[cluster] = s
	}
	return s
}

// Stats sums the clusters' counts; diskBytes is the whole store's.
func (c ClusterCounts) Stats(diskBytes int64) v1alpha1.StoreStats {
	st := v1alpha1.StoreStats{DiskBytes: diskBytes}
	for _, name := range slices.Sorted(maps.Keys(c)) {
		cs := *c[name]
		st.Attempts += cs.Attempts
		st.Folded += cs.Folded
		st.Pods += cs.Pods
		st.Bytes += cs.Bytes
		st.Clusters = append(st.Clusters, cs)
	}
	return st
}

package store

import (
	"context"
	"errors"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
)

// SchemaVersion is the version of the stored schema this build writes.
// Every store migrates databases of older versions to it, step by step
// through the same history, and refuses newer ones.
const SchemaVersion = 2

// ErrNotFound is returned when no stored attempt matches a query.
var ErrNotFound = errors.New("not found")

// Writer is what the follower needs.
type Writer interface {
	// Cursor returns the stored cursor (zero when the store is new).
	Cursor(ctx context.Context) (v1alpha1.Cursor, error)
	// Append stores records and cursor in one transaction. Records
	// already stored (same epoch and sequence) are ignored. records may be
	// empty to store only the cursor.
	Append(ctx context.Context, cursor v1alpha1.Cursor, records []Record) error
}

// Record is an attempt to store.
type Record struct {
	// Attempt is the decoded record. When JSON is set it may lack its
	// Scores: the store reads only the fields it indexes from it.
	Attempt *record.Attempt
	// JSON, when set, is the record as the scheduler encoded it. It is
	// stored as is, which spares encoding it again and keeps the fields
	// this build does not know.
	JSON []byte
}

// Records wraps attempts without their JSON.
func Records(attempts ...*record.Attempt) []Record {
	out := make([]Record, len(attempts))
	for i, a := range attempts {
		out[i] = Record{Attempt: a}
	}
	return out
}

// Reader is what the explain API needs.
type Reader interface {
	Cursor(ctx context.Context) (v1alpha1.Cursor, error)
	// Attempts returns the summaries of the attempts of a pod, newest first.
	Attempts(ctx context.Context, pod PodSelector, limit int) ([]v1alpha1.AttemptSummary, error)
	// Attempt returns the full record of one attempt of a pod; number 0
	// means the latest. It returns ErrNotFound when there is none.
	Attempt(ctx context.Context, pod PodSelector, number int) (*record.Attempt, error)
	// Pods returns pods by their latest attempt, newest first.
	Pods(ctx context.Context, opts PodListOptions) ([]v1alpha1.PodStatus, error)
	// Namespaces returns the namespaces of the stored pods.
	Namespaces(ctx context.Context) ([]string, error)
	// Rejections counts Filter rejections by plugin or by node.
	Rejections(ctx context.Context, q RejectionQuery) ([]v1alpha1.RejectionCount, error)
	// StoreStats describes the store's contents.
	Stats(ctx context.Context) (v1alpha1.StoreStats, error)
}

// Store is a place for decision records.
type Store interface {
	Writer
	Reader
	// Prune applies the retention policy and returns the number of
	// attempts removed.
	Prune(ctx context.Context, now time.Time) (int, error)
	// DeleteNamespace removes every attempt of the pods of namespace, and
	// returns how many it removed.
	DeleteNamespace(ctx context.Context, namespace string) (int, error)
	Close() error
}

// PodSelector names a pod either by UID or by namespace and name.
type PodSelector struct {
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
	// Limit bounds the result (largest counts first); 0 means no bound.
	Limit int
	// Step, when positive, also counts each key in buckets of Step from
	// Since to Until (both then required).
	Step time.Duration
}

// Retention bounds what a store keeps. Zero fields are unbounded.
type Retention struct {
	MaxAge      time.Duration
	MaxAttempts int64
	// MaxAttemptsPerNamespace bounds each namespace's attempts, so that no
	// namespace's retries push every other's history out.
	MaxAttemptsPerNamespace int64
	// MaxDiskBytes bounds the store's files on disk: records, indexes and
	// the write-ahead log.
	MaxDiskBytes int64
}

// Summarize returns the summary of a record.
func Summarize(a *record.Attempt, epoch string) v1alpha1.AttemptSummary {
	s := v1alpha1.AttemptSummary{
		Seq: a.Seq, Epoch: epoch, Pod: a.Pod, Profile: a.Profile, Attempt: a.Attempt, Result: a.Result,
		Message: a.Message, FailedPoint: a.FailedPoint, SelectedNode: a.SelectedNode,
		NominatedNode: a.NominatedNode, TraceID: a.TraceID, Finished: a.FinishTime(), Nodes: a.Nodes,
	}
	for _, r := range a.RejectionsByPlugin() {
		s.Reasons = append(s.Reasons, v1alpha1.RejectionSummary{Plugin: r.Plugin, Reasons: r.Reasons, Nodes: len(r.Nodes)})
	}
	return s
}

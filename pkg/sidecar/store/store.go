package store

import (
	"context"
	"errors"
	"time"

	"github.com/schedscope/schedscope/pkg/record"
)

// ErrNotFound is returned when no stored attempt matches a query.
var ErrNotFound = errors.New("not found")

// Cursor is the follower's position in the scheduler's record stream. It is
// stored together with the records it covers, so that a restart resumes
// exactly where the last stored record left off.
type Cursor struct {
	// Epoch is the stream epoch Seq belongs to; empty before the first list.
	Epoch string `json:"epoch"`
	// Seq is the sequence of the last record stored (or skipped as lost).
	Seq uint64 `json:"seq"`
	// Lost counts, over the life of the store, the records the follower
	// knows it missed because the scheduler dropped them before they were
	// read.
	Lost uint64 `json:"lost"`
}

// Writer is what the follower needs.
type Writer interface {
	// Cursor returns the stored cursor (zero when the store is new).
	Cursor(ctx context.Context) (Cursor, error)
	// Append stores records and cursor in one transaction. Records
	// already stored (same epoch and sequence) are ignored. records may be
	// empty to store only the cursor.
	Append(ctx context.Context, cursor Cursor, records []Record) error
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
	Cursor(ctx context.Context) (Cursor, error)
	// Attempts returns the summaries of the attempts of a pod, newest first.
	Attempts(ctx context.Context, pod PodSelector, limit int) ([]AttemptSummary, error)
	// Attempt returns the full record of one attempt of a pod; number 0
	// means the latest. It returns ErrNotFound when there is none.
	Attempt(ctx context.Context, pod PodSelector, number int) (*record.Attempt, error)
	// Pods returns pods by their latest attempt, newest first.
	Pods(ctx context.Context, opts PodListOptions) ([]PodStatus, error)
	// Namespaces returns the namespaces of the stored pods.
	Namespaces(ctx context.Context) ([]string, error)
	// Rejections counts Filter rejections by plugin or by node.
	Rejections(ctx context.Context, q RejectionQuery) ([]RejectionCount, error)
	// Stats describes the store's contents.
	Stats(ctx context.Context) (Stats, error)
}

// Store is a place for decision records.
type Store interface {
	Writer
	Reader
	// Prune applies the retention policy and returns the number of
	// attempts removed.
	Prune(ctx context.Context, now time.Time) (int, error)
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

// AttemptSummary is one attempt without its per-node detail.
type AttemptSummary struct {
	Seq           uint64             `json:"seq"`
	Epoch         string             `json:"epoch"`
	Pod           record.PodRef      `json:"pod"`
	Profile       string             `json:"profile"`
	Attempt       int                `json:"attempt"`
	Result        record.Result      `json:"result"`
	Message       string             `json:"message,omitempty"`
	FailedPoint   string             `json:"failedPoint,omitempty"`
	SelectedNode  string             `json:"selectedNode,omitempty"`
	NominatedNode string             `json:"nominatedNode,omitempty"`
	TraceID       string             `json:"traceID,omitempty"`
	Finished      time.Time          `json:"finished"`
	Nodes         record.NodeCounts  `json:"nodes"`
	Reasons       []RejectionSummary `json:"reasons,omitempty"`
	// StoredBytes is the size of the stored record.
	StoredBytes int `json:"storedBytes"`
}

// RejectionSummary says how many nodes one plugin rejected in an attempt.
type RejectionSummary struct {
	Plugin  string   `json:"plugin"`
	Reasons []string `json:"reasons,omitempty"`
	Nodes   int      `json:"nodes"`
}

// PodStatus is a pod as its latest attempt left it.
type PodStatus struct {
	Pod       record.PodRef `json:"pod"`
	Profile   string        `json:"profile"`
	FirstSeen time.Time     `json:"firstSeen"`
	// Latest is the pod's latest attempt.
	Latest AttemptSummary `json:"latest"`
}

// Pending reports whether the pod's latest attempt did not schedule it.
func (p PodStatus) Pending() bool { return p.Latest.Result != record.ResultScheduled }

// Rejection grouping keys.
const (
	ByPlugin = "plugin"
	ByNode   = "node"
)

// RejectionQuery selects Filter rejections.
type RejectionQuery struct {
	// By is ByPlugin or ByNode.
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

// RejectionCount is how often a plugin rejected nodes, or a node was rejected.
type RejectionCount struct {
	// Key is the plugin or the node name.
	Key string `json:"key"`
	// Attempts counts the attempts with at least one such rejection.
	Attempts int64 `json:"attempts"`
	// Nodes counts node rejections (a node rejected in two attempts counts twice).
	Nodes int64 `json:"nodes"`
	// Plugins counts, for a node, the rejections by each plugin.
	Plugins map[string]int64 `json:"plugins,omitempty"`
	// Series holds the counts in each bucket when the query has a Step.
	Series []RejectionBucket `json:"series,omitempty"`
}

// RejectionBucket is the count of one key in one time bucket.
type RejectionBucket struct {
	Start    time.Time `json:"start"`
	Attempts int64     `json:"attempts"`
	Nodes    int64     `json:"nodes"`
}

// Buckets returns the number of buckets of a query with a Step.
func (q RejectionQuery) Buckets() int {
	if q.Step <= 0 || q.Until.IsZero() || !q.Since.Before(q.Until) {
		return 0
	}
	return int((q.Until.Sub(q.Since) + q.Step - 1) / q.Step)
}

// Stats describes a store's contents.
type Stats struct {
	Attempts int64 `json:"attempts"`
	Pods     int64 `json:"pods"`
	// Bytes is the size of the stored records.
	Bytes int64 `json:"bytes"`
}

// Retention bounds what a store keeps. Zero fields are unbounded.
type Retention struct {
	MaxAge      time.Duration
	MaxAttempts int64
	MaxBytes    int64
}

// Summarize returns the summary of a record.
func Summarize(a *record.Attempt, epoch string) AttemptSummary {
	s := AttemptSummary{
		Seq: a.Seq, Epoch: epoch, Pod: a.Pod, Profile: a.Profile, Attempt: a.Attempt, Result: a.Result,
		Message: a.Message, FailedPoint: a.FailedPoint, SelectedNode: a.SelectedNode,
		NominatedNode: a.NominatedNode, TraceID: a.TraceID, Finished: FinishTime(a), Nodes: a.Nodes,
	}
	for _, g := range a.Filter {
		if g.Verdict != record.VerdictRejected {
			continue
		}
		merged := false
		for i := range s.Reasons {
			if s.Reasons[i].Plugin == g.Plugin {
				s.Reasons[i].Nodes += len(g.Nodes)
				s.Reasons[i].Reasons = appendMissing(s.Reasons[i].Reasons, g.Reasons)
				merged = true
				break
			}
		}
		if !merged {
			s.Reasons = append(s.Reasons, RejectionSummary{Plugin: g.Plugin, Reasons: append([]string(nil), g.Reasons...), Nodes: len(g.Nodes)})
		}
	}
	return s
}

func appendMissing(dst, src []string) []string {
	for _, s := range src {
		found := false
		for _, d := range dst {
			if d == s {
				found = true
				break
			}
		}
		if !found {
			dst = append(dst, s)
		}
	}
	return dst
}

// FinishTime is the time that orders an attempt: when it finished, or
// when it started if it has no finish time.
func FinishTime(a *record.Attempt) time.Time {
	switch {
	case !a.Timing.Finished.IsZero():
		return a.Timing.Finished
	case !a.Timing.Started.IsZero():
		return a.Timing.Started
	default:
		return a.Timing.Queued
	}
}

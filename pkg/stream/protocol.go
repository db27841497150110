package stream

import "github.com/schedscope/schedscope/pkg/record"

// Path is where the record stream is served.
const Path = "/v1/records"

// Query parameters of Path.
const (
	// ParamWatch turns a list into a watch ("true").
	ParamWatch = "watch"
	// ParamSince is the last sequence the client has; the response holds the
	// records after it.
	ParamSince = "since"
	// ParamEpoch is the epoch the client's sequence belongs to.
	ParamEpoch = "epoch"
)

// Event types of a watch.
const (
	// EventAdded carries a new record.
	EventAdded = "ADDED"
	// EventBookmark carries no record; it tells the client the stream is
	// alive and its last sequence.
	EventBookmark = "BOOKMARK"
)

// List is the response to a list.
type List struct {
	// Version is the format version of the items' records
	// (record.FormatVersion): a reader refuses a list of a version it does
	// not read.
	Version int `json:"version"`
	// Epoch identifies this run of the scheduler; sequences restart with it.
	Epoch string `json:"epoch"`
	// Seq is the sequence of the answer's last record, or the requested
	// one when it has none. An answer holds at most MaxAnswerBytes of
	// records: the client continues from Seq with a watch or another list.
	Seq uint64 `json:"seq"`
	// Oldest is the sequence of the oldest record still buffered.
	Oldest uint64 `json:"oldest"`
	// Newest is the sequence of the newest record buffered when the
	// answer was made: while Seq < Newest, there is more to read.
	Newest uint64 `json:"newest"`
	// Items are buffered records after the requested sequence, oldest first.
	Items []Record `json:"items"`
}

// Record is a decision record as the stream carries it: its place in the
// stream and its trace beside the record itself. It is a list's item, and
// what a reader hands on to the store.
type Record struct {
	// Seq is the record's sequence in its epoch, from 1.
	Seq uint64 `json:"seq"`
	// TraceID links the record to its OpenTelemetry trace, when traced.
	TraceID string `json:"traceID,omitempty"`
	// Attempt is the record. A reader that keeps JSON decodes it without
	// its Scores (the bulk of a large record).
	Attempt *record.Attempt `json:"object"`
	// JSON, when set, is the record as the scheduler encoded it: the store
	// keeps it as is, which spares encoding it again and keeps the fields
	// this build does not know.
	JSON []byte `json:"-"`
}

// Records numbers attempts as a stream does, from first on, without JSON
// or traces.
func Records(first uint64, attempts ...*record.Attempt) []Record {
	out := make([]Record, len(attempts))
	for i, a := range attempts {
		out[i] = Record{Seq: first + uint64(i), Attempt: a}
	}
	return out
}

// Event is one line of a watch.
type Event struct {
	Type string `json:"type"`
	// Version is the format version of Object (record.FormatVersion); an
	// ADDED event carries it, a bookmark does not.
	Version int `json:"version,omitempty"`
	// Seq is the sequence of the record, or the stream's last sequence for a bookmark.
	Seq uint64 `json:"seq"`
	// TraceID is the record's trace, when traced.
	TraceID string          `json:"traceID,omitempty"`
	Object  *record.Attempt `json:"object,omitempty"`
}

// Gone is the body of a 410 response. A client that had sequence Since
// in Epoch lost Oldest-Since-1 records when Epoch is unchanged; when the
// epoch changed, the scheduler restarted and the gap is unknown.
type Gone struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Epoch   string `json:"epoch"`
	Oldest  uint64 `json:"oldest"`
}

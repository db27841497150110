// Package store defines where the sidecar keeps decision records: the Store
// interface and its queries, whose answers are the explain API's types
// (package v1alpha1), the follower's cursor among them; and what every
// store keeps of a record (Row: the record format version and the
// zstd-compressed JSON, summary, rejection index and outcome signature)
// and counts (Tally). The
// implementations are sub-packages: sqlite (embedded, the default) and
// postgres; storetest is the suite both pass.
package store

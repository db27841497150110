// Package sqlite implements store.Store in an embedded SQLite database file
// (modernc.org/sqlite, pure Go). Each attempt is one row holding its summary
// as JSON and its full record as zstd-compressed JSON; side tables index the
// latest attempt of every pod and the Filter rejections of every attempt.
// The schema is versioned (SQLite's user_version) and migrated forward on
// Open.
package sqlite

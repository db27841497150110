package sqlstore

import (
	"strconv"
	"strings"
)

// Dialect is what differs between the SQL databases a Store runs on.
type Dialect struct {
	// NumberedParams: queries name their parameters $1, $2, ...
	// (PostgreSQL) rather than ? (SQLite).
	NumberedParams bool
	// HintsIndexes: queries name the index to use where the planner may
	// choose a worse one (SQLite's INDEXED BY).
	HintsIndexes bool

	// The schema's column types: ID is the attempts' key, generated on
	// insert; Int holds 32 bits, BigInt 64.
	ID, Int, BigInt, Text, Bytes string
	// StoresOutOfLine: the schema keeps the zstd-compressed columns out of
	// line and uncompressed (PostgreSQL's STORAGE EXTERNAL).
	StoresOutOfLine bool
	// BatchedPrune: retention deletes in batches by namespace and by
	// latest attempt, and the schema has the indexes that lead there.
	BatchedPrune bool
	// RekeysByRebuild: the database changes a table's keys only by
	// rebuilding the table, and keeps the id counter of an AUTOINCREMENT
	// key in sqlite_sequence (SQLite).
	RekeysByRebuild bool
	// RowLevelSecurity: the schema confines a database role named a
	// cluster's writer (table cluster_writers) to writing that cluster's
	// rows, by row-level security (PostgreSQL); the tables' owner is not
	// confined.
	RowLevelSecurity bool

	// BeginMigration runs first in each migration's transaction: it takes
	// the migration lock, if the database needs one, and makes the schema
	// version readable.
	BeginMigration string
	// ReadVersion reads the schema version, 0 for a new database.
	ReadVersion string
	// WriteVersion returns the statements that set the schema version.
	WriteVersion func(version int) string
	// TimedOut, when set, reports whether err is the database server's
	// statement timeout.
	TimedOut func(err error) bool
}

// bind returns query with its ? parameters named in d's style.
func (d *Dialect) bind(query string) string {
	if !d.NumberedParams {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
}

// indexedBy names index to the planner for the table just named, where d
// lets queries hint.
func (d *Dialect) indexedBy(index string) string {
	if !d.HintsIndexes {
		return ""
	}
	return " INDEXED BY " + index
}

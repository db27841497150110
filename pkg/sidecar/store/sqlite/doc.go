// Package sqlite implements store.Store in an embedded SQLite database file
// (modernc.org/sqlite, pure Go): the SQL of package sqlstore in SQLite's
// dialect, and retention that gives the pages it frees back to the file
// system. The schema is versioned (SQLite's user_version) and migrated
// forward on Open.
package sqlite

// Package postgres implements store.Store in a PostgreSQL database (pgx,
// through database/sql): the SQL of package sqlstore in PostgreSQL's
// dialect, with the tables, schema versions and encodings of the SQLite
// store. Several sidecars can write one database and any number of API
// servers read it. Retention deletes in small batches, each its own
// transaction, so that it never holds up ingest.
package postgres

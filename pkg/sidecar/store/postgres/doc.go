// Package postgres implements store.Store in a PostgreSQL database (pgx),
// with the tables, schema versions and encodings of the SQLite store:
// several sidecars can write one database and any number of API servers
// read it. Retention deletes in small batches, each its own transaction,
// so that it never holds up ingest.
package postgres

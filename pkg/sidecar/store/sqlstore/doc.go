// Package sqlstore is the SQL both stores run: the schema's history, its
// migration, and the queries that store records and answer the explain
// API, written once over database/sql and parameterised by a Dialect for
// what differs between SQLite and PostgreSQL (parameters, column types,
// index hints, the steps of the history each takes its own way), and
// retention's fair shares among a cluster's namespaces. The packages
// sqlite and postgres open the database, define their dialect and apply
// retention, whose strategy differs.
package sqlstore

// Package store defines where the sidecar keeps decision records: the Store
// interface, the query and result types the explain API serves, and the
// follower's cursor. Implementations live in sub-packages (sqlite); a server
// database can replace the embedded one by implementing Store.
package store

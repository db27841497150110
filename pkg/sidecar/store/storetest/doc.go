// Package storetest is the conformance suite of store.Store: the queries
// the explain API makes, the cursor committed with its records, idempotent
// re-appends, folded repeats, retention, namespace deletion and byte
// accounting. Every store runs it from its own tests with Run.
package storetest

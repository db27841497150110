// Package store defines where the sidecar keeps decision records: the Store
// interface and its queries; its answers are the explain API's types
// (package v1alpha1), the follower's cursor among them. Implementations live in sub-packages (sqlite); a server
// database can replace the embedded one by implementing Store.
package store

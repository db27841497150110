package sqlstore

import (
	"testing"

	"github.com/schedscope/schedscope/pkg/sidecar/store"
)

func TestHistoryIsTheStoresSchemaVersions(t *testing.T) {
	if len(history) != store.SchemaVersion {
		t.Errorf("the schema history has %d versions, store.SchemaVersion is %d", len(history), store.SchemaVersion)
	}
}

func TestBind(t *testing.T) {
	const q = `SELECT a FROM t WHERE b = ? AND c IN (?, ?)`
	for _, tt := range []struct {
		name string
		d    Dialect
		want string
	}{
		{"question marks", Dialect{}, q},
		{"numbered", Dialect{NumberedParams: true}, `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.bind(q); got != tt.want {
				t.Errorf("bind(%q) = %q, want %q", q, got, tt.want)
			}
		})
	}
}

package app

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTable: a table's columns are two spaces apart, as wide as their
// widest cell; its header row is left out on request, and a prepended
// column comes first in the header and in every row.
func TestTable(t *testing.T) {
	build := func() *table {
		tb := newTable("NAME", "NODES", "MESSAGE")
		tb.addRow("web", "3", "")
		tb.addRow("database", "12", "0/2 nodes are available")
		return tb
	}
	tests := []struct {
		name    string
		table   func() *table
		headers bool
		want    string
	}{{
		name: "with headers", table: build, headers: true,
		want: "NAME      NODES  MESSAGE\n" +
			"web       3      \n" +
			"database  12     0/2 nodes are available\n",
	}, {
		name: "without headers", table: build,
		want: "web       3   \n" +
			"database  12  0/2 nodes are available\n",
	}, {
		name: "a column prepended", headers: true,
		table: func() *table {
			tb := build()
			tb.prependColumn("CLUSTER", []string{"east", "-"})
			return tb
		},
		want: "CLUSTER  NAME      NODES  MESSAGE\n" +
			"east     web       3      \n" +
			"-        database  12     0/2 nodes are available\n",
	}, {
		name: "no rows", headers: true, table: func() *table { return newTable("NAME", "NODES") },
		want: "NAME  NODES\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			tt.table().print(&out, tt.headers)
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}
}

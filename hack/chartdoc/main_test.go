package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testSchema = `{
  "definitions": {"port": {"type": "integer", "minimum": 1}, "resources": {"type": "object", "additionalProperties": false, "properties": {"limits": {"type": "object"}}}},
  "properties": {
    "global": {"type": "object", "description": "Shared values."},
    "mode": {"enum": ["a", "b"], "description": "The mode."},
    "server": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "port": {"$ref": "#/definitions/port", "description": "The port."},
        "resources": {"$ref": "#/definitions/resources", "description": "The resources."},
        "auth": {"type": "object", "additionalProperties": false, "description": "Credentials | none.", "properties": {"key": {"type": "string"}}}
      }
    },
    "config": {"type": "object", "description": "Free form.", "properties": {"kind": {"const": "X"}}},
    "budget": {"type": ["integer", "string"], "description": "How many."}
  }
}`

const testValues = `
mode: a
server:
  port: 8443
  resources:
    limits:
      memory: 1Gi
  auth: {}
config:
  kind: X
  profiles:
  - name: a-long-profile-name-that-makes-the-default-longer-than-the-table-shows
budget: 1
`

// TestValuesTable: a row per value, in the schema's order; a closed object
// with properties and a default is split into its properties, a definition
// or an empty default is one row; enums are listed, pipes escaped, long
// defaults left to values.yaml and a value without a default has none.
func TestValuesTable(t *testing.T) {
	got, err := valuesTable([]byte(testSchema), []byte(testValues))
	if err != nil {
		t.Fatal(err)
	}
	want := "| Key | Type | Default | Description |\n|---|---|---|---|\n" +
		"| `global` | object |  | Shared values. |\n" +
		"| `mode` | string | `\"a\"` | The mode. One of `a`, `b`. |\n" +
		"| `server.port` | integer | `8443` | The port. |\n" +
		"| `server.resources` | object | `{\"limits\":{\"memory\":\"1Gi\"}}` | The resources. |\n" +
		"| `server.auth` | object | `{}` | Credentials \\| none. |\n" +
		"| `config` | object | see values.yaml | Free form. |\n" +
		"| `budget` | integer or string | `1` | How many. |\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// TestValuesTableNeedsDescriptions: a value without a description is an
// error naming its key.
func TestValuesTableNeedsDescriptions(t *testing.T) {
	schema := `{"properties": {"server": {"type": "object", "additionalProperties": false, "properties": {"port": {"type": "integer"}}}}}`
	_, err := valuesTable([]byte(schema), []byte("server:\n  port: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "server.port has no description") {
		t.Errorf("error %v, want one naming server.port", err)
	}
}

// TestReplaceTable: the table replaces what is between the markers and
// nothing else; a README without them is an error.
func TestReplaceTable(t *testing.T) {
	readme := "# Chart\n\n" + beginMarker + "| old |\n" + endMarker + "\nMore.\n"
	got, err := replaceTable(readme, "| new |\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Chart\n\n" + beginMarker + "| new |\n" + endMarker + "\nMore.\n"; got != want {
		t.Errorf("README:\n%s\nwant:\n%s", got, want)
	}
	if _, err := replaceTable("# Chart\n", "| new |\n"); err == nil {
		t.Error("a README without markers: no error")
	}
}

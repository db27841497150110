// Command chartdoc writes the values table of a Helm chart's README from
// the chart's values.schema.json (each value's type and description) and
// values.yaml (its default), between the README's markers. `make
// chart-docs` runs it; `make verify` checks that the README is up to date.
//
//	go run ./hack/chartdoc -chart charts/schedscope
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// The markers around the generated table in the README.
const (
	beginMarker = "<!-- values table: written by make chart-docs -->\n"
	endMarker   = "<!-- end of values table -->\n"
)

// maxDefault is the longest default shown in the table, in bytes; a longer
// one is left to values.yaml.
const maxDefault = 80

func main() {
	chart := flag.String("chart", "charts/schedscope", "the chart's directory")
	out := flag.String("out", "", "the file to write; empty: the chart's README.md")
	flag.Parse()
	if *out == "" {
		*out = filepath.Join(*chart, "README.md")
	}
	if err := run(*chart, *out); err != nil {
		log.Fatal(err)
	}
}

// run writes the chart's README with a fresh values table to out.
func run(chart, out string) error {
	schemaJSON, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		return err
	}
	valuesYAML, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		return err
	}
	readme, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		return err
	}
	table, err := valuesTable(schemaJSON, valuesYAML)
	if err != nil {
		return err
	}
	updated, err := replaceTable(string(readme), table)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(chart, "README.md"), err)
	}
	return os.WriteFile(out, []byte(updated), 0o644)
}

// valuesTable is the Markdown table of every value the schema describes:
// its key, type, default (from values.yaml) and description.
func valuesTable(schemaJSON, valuesYAML []byte) (string, error) {
	var root schema
	if err := json.Unmarshal(schemaJSON, &root); err != nil {
		return "", fmt.Errorf("values.schema.json: %w", err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(valuesYAML, &values); err != nil {
		return "", fmt.Errorf("values.yaml: %w", err)
	}
	var rows []row
	for _, p := range root.Properties {
		var err error
		if rows, err = appendRows(rows, &root, p.name, p.schema, values[p.name], hasKey(values, p.name)); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.key, cell(r.typ), cell(r.def), cell(r.description))
	}
	return b.String(), nil
}

// row is one value of the table.
type row struct {
	key, typ, def, description string
}

// appendRows appends the rows of the value at key: one row, or one per
// property of an object whose own schema (not a definition it refers to)
// names and closes its keys and whose default sets them.
func appendRows(rows []row, root *schema, key string, s *schema, def any, hasDefault bool) ([]row, error) {
	resolved, err := root.resolve(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if m, ok := def.(map[string]any); ok && len(m) > 0 && len(s.Properties) > 0 && s.closed() {
		for _, p := range s.Properties {
			if rows, err = appendRows(rows, root, key+"."+p.name, p.schema, m[p.name], hasKey(m, p.name)); err != nil {
				return nil, err
			}
		}
		return rows, nil
	}
	description := s.Description
	if description == "" {
		description = resolved.Description
	}
	if description == "" {
		return nil, fmt.Errorf("%s has no description in values.schema.json", key)
	}
	if len(resolved.Enum) > 0 {
		description += " One of " + strings.Join(quoted(resolved.Enum), ", ") + "."
	}
	r := row{key: key, typ: resolved.typeName(), description: description}
	if hasDefault {
		if r.def, err = defaultText(def); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	return append(rows, r), nil
}

// defaultText is a default as compact JSON in code, or a pointer to
// values.yaml when it is long.
func defaultText(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	if len(data) > maxDefault {
		return "see values.yaml", nil
	}
	return "`" + string(data) + "`", nil
}

// cell escapes what would end a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

func quoted(values []any) []string {
	var q []string
	for _, v := range values {
		data, _ := json.Marshal(v)
		q = append(q, "`"+strings.Trim(string(data), `"`)+"`")
	}
	return q
}

func hasKey(m map[string]any, key string) bool {
	_, ok := m[key]
	return ok
}

// replaceTable replaces what is between the markers of readme with table.
func replaceTable(readme, table string) (string, error) {
	begin := strings.Index(readme, beginMarker)
	end := strings.Index(readme, endMarker)
	if begin < 0 || end < begin {
		return "", errors.New("no values table markers: " + strings.TrimSpace(beginMarker) + " ... " + strings.TrimSpace(endMarker))
	}
	return readme[:begin+len(beginMarker)] + table + readme[end:], nil
}

// schema is the part of a JSON schema that the table reads.
type schema struct {
	Type                 any                `json:"type"`
	Ref                  string             `json:"$ref"`
	Description          string             `json:"description"`
	Enum                 []any              `json:"enum"`
	Const                any                `json:"const"`
	Properties           properties         `json:"properties"`
	AdditionalProperties any                `json:"additionalProperties"`
	Definitions          map[string]*schema `json:"definitions"`
}

// resolve returns the definition s refers to, or s.
func (root *schema) resolve(s *schema) (*schema, error) {
	if s.Ref == "" {
		return s, nil
	}
	name, ok := strings.CutPrefix(s.Ref, "#/definitions/")
	if d := root.Definitions[name]; ok && d != nil {
		return d, nil
	}
	return nil, fmt.Errorf("$ref %q: no such definition", s.Ref)
}

// closed reports whether the schema allows only the properties it names.
func (s *schema) closed() bool {
	return s.AdditionalProperties == false
}

// typeName is the schema's type, or the type of its enum's or const's
// values.
func (s *schema) typeName() string {
	switch t := s.Type.(type) {
	case string:
		return t
	case []any:
		var names []string
		for _, n := range t {
			names = append(names, fmt.Sprint(n))
		}
		return strings.Join(names, " or ")
	}
	v := s.Const
	if len(s.Enum) > 0 {
		v = s.Enum[0]
	}
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	}
	return ""
}

// property is one named property of an object's schema.
type property struct {
	name   string
	schema *schema
}

// properties are an object's properties in the order the schema lists them.
type properties []property

func (p *properties) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("properties: want an object: %v", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		s := &schema{}
		if err := dec.Decode(s); err != nil {
			return fmt.Errorf("properties.%v: %w", tok, err)
		}
		*p = append(*p, property{name: tok.(string), schema: s})
	}
	return nil
}

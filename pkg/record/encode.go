package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Encode returns a's JSON as the record stream and the sidecar's store
// carry it. It is json.Marshal's encoding except for the node scores, most
// of a 5000-node attempt's record (hundreds of nodes times each score
// plugin), which Encode writes in columns, one list per plugin, without
// the derived weighted values and with a plugin's raw scores only where
// they differ from its normalized ones:
//
//	"scores": {"plugins": [{"name": "A", "weight": 2}, {"name": "B", "weight": 1}],
//	  "nodeNames": ["n1", "n2"], "totals": [300, 120],
//	  "normalized": [[100, 50], [100, 20]], "raw": [null, [7, 3]]}
//
// That is less than half the bytes of the JSON of []NodeScore. The node
// lists (scores and Filter groups) are written directly, with the bytes
// json.Marshal would write for them: encoding/json would reach each value
// through reflection and copy the whole record once more.
// Scores.UnmarshalJSON reads both forms.
func Encode(a *Attempt) ([]byte, error) { return AppendEncode(nil, a) }

// AppendEncode appends Encode's encoding of a to b: a caller that reuses b
// does not grow a new slice for each record.
func AppendEncode(b []byte, a *Attempt) ([]byte, error) {
	// The fields written directly are the last ones, in json.Marshal's
	// order: they go where the head's closing brace was.
	head := *a
	head.Filter, head.Scores, head.Details, head.DetailsCut = nil, nil, nil, 0
	data, err := json.Marshal(&head)
	if err != nil {
		return b, err
	}
	var tail []byte
	if a.Scores != nil && len(a.Scores.Nodes) == 0 {
		if tail, err = json.Marshal(a.Scores); err != nil {
			return b, err
		}
	}
	var details []byte
	if len(a.Details) > 0 {
		if details, err = json.Marshal(a.Details); err != nil {
			return b, err
		}
	}
	size := len(data) + len(tail) + len(details) + 64
	for _, g := range a.Filter {
		size += 128
		if len(g.Nodes) > 0 {
			size += len(g.Nodes) * (3 + len(g.Nodes[0]))
		}
	}
	if a.Scores != nil && len(a.Scores.Nodes) > 0 {
		size += a.Scores.encodedSizeHint()
	}
	b = slices.Grow(b, size)
	b = append(b, data[:len(data)-1]...)
	if len(a.Filter) > 0 {
		b = append(b, `,"filter":`...)
		b = appendFilter(b, a.Filter)
	}
	if a.Scores != nil {
		b = append(b, `,"scores":`...)
		if tail != nil {
			b = append(b, tail...)
		} else {
			b = a.Scores.appendColumns(b)
		}
	}
	if details != nil {
		b = append(b, `,"details":`...)
		b = append(b, details...)
	}
	if a.DetailsCut != 0 {
		b = append(b, `,"detailsCut":`...)
		b = strconv.AppendInt(b, int64(a.DetailsCut), 10)
	}
	return append(b, '}'), nil
}

// appendFilter writes the verdict groups as json.Marshal does.
func appendFilter(b []byte, groups []VerdictGroup) []byte {
	b = append(b, '[')
	for i := range groups {
		g := &groups[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"verdict":`...)
		b = appendString(b, g.Verdict)
		if g.Plugin != "" {
			b = append(b, `,"plugin":`...)
			b = appendString(b, g.Plugin)
		}
		if g.Code != "" {
			b = append(b, `,"code":`...)
			b = appendString(b, g.Code)
		}
		if len(g.Reasons) > 0 {
			b = append(b, `,"reasons":`...)
			b = appendStrings(b, g.Reasons)
		}
		if g.NotEvaluatedReason != "" {
			b = append(b, `,"notEvaluatedReason":`...)
			b = appendString(b, g.NotEvaluatedReason)
		}
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, int64(g.Count), 10)
		if len(g.Nodes) > 0 {
			b = append(b, `,"nodes":`...)
			b = appendStrings(b, g.Nodes)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendStrings writes a JSON list of strings.
func appendStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// encodedSizeHint is about the length of the columns' JSON, so that they
// are written without growing the buffer.
func (s *Scores) encodedSizeHint() int {
	perNode := 8 + 2*4*len(s.Plugins) + len(s.Nodes[0].Node)
	return 64*len(s.Plugins) + perNode*len(s.Nodes)
}

// appendColumns writes s, which has nodes, in Encode's columns.
func (s *Scores) appendColumns(b []byte) []byte {
	b = append(b, '{')
	if s.SkippedReason != "" {
		b = append(b, `"skippedReason":`...)
		b = appendString(b, s.SkippedReason)
		b = append(b, ',')
	}
	b = append(b, `"plugins":[`...)
	for i, p := range s.Plugins {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendString(b, p.Name)
		b = append(b, `,"weight":`...)
		b = strconv.AppendInt(b, p.Weight, 10)
		b = append(b, '}')
	}
	b = append(b, `],"nodeNames":[`...)
	for k := range s.Nodes {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s.Nodes[k].Node)
	}
	b = append(b, `],"totals":`...)
	b = s.appendColumn(b, func(n *NodeScore) int64 { return n.Total })
	b = append(b, `,"normalized":[`...)
	for i := range s.Plugins {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendColumn(b, func(n *NodeScore) int64 { return valueAt(n.Normalized, i) })
	}
	b = append(b, `],"raw":[`...)
	for i := range s.Plugins {
		if i > 0 {
			b = append(b, ',')
		}
		if s.rawIsNormalized(i) {
			b = append(b, "null"...)
			continue
		}
		b = s.appendColumn(b, func(n *NodeScore) int64 { return valueAt(n.Raw, i) })
	}
	b = append(b, ']')
	for k := range s.Nodes {
		if s.Nodes[k].Extenders != 0 {
			b = append(b, `,"extenders":`...)
			b = s.appendColumn(b, func(n *NodeScore) int64 { return n.Extenders })
			break
		}
	}
	return append(b, '}')
}

// appendColumn writes one value of each node as a JSON list.
func (s *Scores) appendColumn(b []byte, value func(*NodeScore) int64) []byte {
	b = append(b, '[')
	for k := range s.Nodes {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, value(&s.Nodes[k]), 10)
	}
	return append(b, ']')
}

// rawIsNormalized reports whether every node's raw score of plugin i is
// its normalized score, as for a plugin without NormalizeScore.
func (s *Scores) rawIsNormalized(i int) bool {
	for k := range s.Nodes {
		if valueAt(s.Nodes[k].Raw, i) != valueAt(s.Nodes[k].Normalized, i) {
			return false
		}
	}
	return true
}

// valueAt returns v[i], or 0 past v's end.
func valueAt(v []int64, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// scoresJSON holds both JSON forms of Scores: json.Marshal's ("nodes") and
// Encode's columns ("nodeNames" and the lists after it).
type scoresJSON struct {
	SkippedReason string        `json:"skippedReason"`
	Plugins       []ScorePlugin `json:"plugins"`
	Nodes         []NodeScore   `json:"nodes"`
	NodeNames     []string      `json:"nodeNames"`
	Totals        []int64       `json:"totals"`
	Normalized    [][]int64     `json:"normalized"`
	Raw           [][]int64     `json:"raw"`
	Extenders     []int64       `json:"extenders"`
}

// UnmarshalJSON reads s from json.Marshal's encoding or from Encode's
// columns, which it checks for consistent lengths. Each node's Weighted is
// its Normalized times the plugin's weight, as the framework computes it.
func (s *Scores) UnmarshalJSON(data []byte) error {
	var w scoresJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*s = Scores{SkippedReason: w.SkippedReason, Plugins: w.Plugins, Nodes: w.Nodes}
	if w.NodeNames == nil {
		if w.Totals != nil || w.Normalized != nil || w.Raw != nil || w.Extenders != nil {
			return errors.New("scores: totals, normalized, raw and extenders need nodeNames")
		}
		return nil
	}
	if w.Nodes != nil {
		return errors.New("scores: both nodes and nodeNames")
	}
	if err := w.checkColumns(); err != nil {
		return fmt.Errorf("scores: %w", err)
	}
	p, n := len(w.Plugins), len(w.NodeNames)
	// One backing array for every node's values, as the scheduler builds them.
	values := make([]int64, 3*p*n)
	s.Nodes = make([]NodeScore, n)
	for k, name := range w.NodeNames {
		v := values[3*p*k : 3*p*(k+1)]
		node := &s.Nodes[k]
		*node = NodeScore{Node: name, Raw: v[:p:p], Normalized: v[p : 2*p : 2*p], Weighted: v[2*p : 3*p : 3*p], Total: w.Totals[k]}
		if w.Extenders != nil {
			node.Extenders = w.Extenders[k]
		}
		for i, plugin := range w.Plugins {
			normalized := w.Normalized[i][k]
			node.Normalized[i] = normalized
			node.Weighted[i] = normalized * plugin.Weight
			node.Raw[i] = normalized
			if w.Raw[i] != nil {
				node.Raw[i] = w.Raw[i][k]
			}
		}
	}
	return nil
}

// checkColumns checks that there is a list per plugin and a value per node.
func (w *scoresJSON) checkColumns() error {
	p, n := len(w.Plugins), len(w.NodeNames)
	if len(w.Totals) != n {
		return fmt.Errorf("totals has %d values for %d nodeNames", len(w.Totals), n)
	}
	if w.Extenders != nil && len(w.Extenders) != n {
		return fmt.Errorf("extenders has %d values for %d nodeNames", len(w.Extenders), n)
	}
	if len(w.Normalized) != p {
		return fmt.Errorf("normalized has %d lists for %d plugins", len(w.Normalized), p)
	}
	if len(w.Raw) != p {
		return fmt.Errorf("raw has %d lists for %d plugins", len(w.Raw), p)
	}
	for i := range p {
		if len(w.Normalized[i]) != n {
			return fmt.Errorf("normalized[%d] has %d values for %d nodeNames", i, len(w.Normalized[i]), n)
		}
		if w.Raw[i] != nil && len(w.Raw[i]) != n {
			return fmt.Errorf("raw[%d] has %d values for %d nodeNames", i, len(w.Raw[i]), n)
		}
	}
	return nil
}

// escaped marks the bytes json.Marshal does not copy as they are: control
// characters, non-ASCII bytes, '"', '\\', and '<', '>' and '&', which it
// escapes for HTML.
var escaped = func() (t [256]bool) {
	for c := range t {
		t[c] = c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
	}
	return t
}()

// appendString writes s quoted. Node and plugin names are printable ASCII
// that needs no escape and are copied as they are; anything else is left to
// encoding/json, with its escapes.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if escaped[s[i]] {
			quoted, _ := json.Marshal(s) // a string always encodes
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

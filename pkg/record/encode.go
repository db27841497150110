package record

import (
	"encoding/json"
	"strconv"
)

// Encode returns a's JSON: byte for byte what json.Marshal returns, at a
// fraction of the cost for a large attempt. The node scores, most of a
// 5000-node attempt's record (hundreds of nodes times three values per
// score plugin), are written directly; encoding/json would reach each of
// those values through reflection. The rest of the record goes through
// json.Marshal.
func Encode(a *Attempt) ([]byte, error) {
	if a.Scores == nil || len(a.Scores.Nodes) == 0 {
		return json.Marshal(a)
	}
	head := *a
	head.Scores = nil
	data, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(data)+a.Scores.encodedSizeHint())
	// Scores is the last field: it goes where the closing brace was.
	b = append(b, data[:len(data)-1]...)
	b = append(b, `,"scores":`...)
	b = a.Scores.appendJSON(b)
	return append(b, '}'), nil
}

// encodedSizeHint is about the length of the scores' JSON, so that it is
// written without growing the buffer.
func (s *Scores) encodedSizeHint() int {
	perNode := 48 + 3*4*len(s.Plugins)
	if len(s.Nodes) > 0 {
		perNode += len(s.Nodes[0].Node)
	}
	return 64*len(s.Plugins) + perNode*len(s.Nodes)
}

func (s *Scores) appendJSON(b []byte) []byte {
	b = append(b, '{')
	sep := func(b []byte) []byte {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		return b
	}
	if s.SkippedReason != "" {
		b = append(b, `"skippedReason":`...)
		b = appendString(b, s.SkippedReason)
	}
	if len(s.Plugins) > 0 {
		b = append(sep(b), `"plugins":[`...)
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
		b = append(b, ']')
	}
	if len(s.Nodes) > 0 {
		b = append(sep(b), `"nodes":[`...)
		for i := range s.Nodes {
			if i > 0 {
				b = append(b, ',')
			}
			b = s.Nodes[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (n *NodeScore) appendJSON(b []byte) []byte {
	b = append(b, `{"node":`...)
	b = appendString(b, n.Node)
	b = append(b, `,"raw":`...)
	b = appendInts(b, n.Raw)
	b = append(b, `,"normalized":`...)
	b = appendInts(b, n.Normalized)
	b = append(b, `,"weighted":`...)
	b = appendInts(b, n.Weighted)
	if n.Extenders != 0 {
		b = append(b, `,"extenders":`...)
		b = strconv.AppendInt(b, n.Extenders, 10)
	}
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, n.Total, 10)
	return append(b, '}')
}

// appendInts writes v as encoding/json does: null when nil.
func appendInts(b []byte, v []int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return append(b, ']')
}

// appendString writes s quoted. Node and plugin names are printable ASCII
// that needs no escape and are copied as they are; anything else is left to
// encoding/json, with its escapes (it also escapes <, > and &).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always encodes
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

package tracing

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"github.com/schedscope/schedscope/pkg/record"
)

// maxListValues bounds each string list attribute (reasons, victims,
// rejections, per-plugin scores): a status seldom has more than a handful
// of reasons, and the record keeps more (record.MaxReasons). A longer list
// keeps its first values and ends with "… and N more".
const maxListValues = 10

// cut bounds a string that reaches a span (attribute and event values,
// list elements, status descriptions) to MaxAttributeLength bytes, cut on a
// UTF-8 boundary and marked "… (N bytes cut)" (record.CutText). Every
// string from pod or plugin data goes through it. The SDK's own
// AttributeValueLengthLimit is not enough: it counts characters, not bytes,
// so 4096 emoji are 16 KiB; it does not apply to status descriptions; and it
// is not set at all when Options.TracerProvider replaces the pipeline.
func cut(s string) string {
	return record.CutText(s, MaxAttributeLength)
}

// minListRoom is the least room, in bytes, worth a cut value in a list.
const minListRoom = 64

// cutList bounds a string list that reaches a span: at most maxListValues
// values, MaxAttributeLength bytes in all, each value cut (the one that
// crosses the byte bound is cut to the room left); when values are left
// out, the last value says how many ("… and 3 more"). A list attribute is
// then about as large as a string attribute at most. values is never
// modified.
func cutList(values []string) []string {
	if len(values) <= maxListValues {
		size := 0
		for _, v := range values {
			size += len(v)
		}
		if size <= MaxAttributeLength {
			return values
		}
	}
	limit := min(len(values), maxListValues-1)
	out := make([]string, 0, limit+1)
	size := 0
	for _, v := range values[:limit] {
		room := MaxAttributeLength - size
		if room < minListRoom && len(out) > 0 {
			break
		}
		v = record.CutText(v, room)
		out = append(out, v)
		size += len(v)
	}
	if more := len(values) - len(out); more > 0 {
		out = append(out, fmt.Sprintf("… and %d more", more))
	}
	return out
}

// stringAttr is key set to the cut value.
func stringAttr(key attribute.Key, value string) attribute.KeyValue {
	return key.String(cut(value))
}

// listAttr is key set to the cut list.
func listAttr(key attribute.Key, values []string) attribute.KeyValue {
	return key.StringSlice(cutList(values))
}

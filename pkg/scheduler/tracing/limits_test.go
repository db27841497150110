package tracing

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/record"
)

// TestCutCountsBytes cuts multi-byte text: the bound is in bytes, so 2000
// emoji (2000 characters, which the SDK's character limit lets through,
// 8000 bytes) are cut to MaxAttributeLength bytes on a rune boundary.
func TestCutCountsBytes(t *testing.T) {
	tests := []struct {
		name    string
		s       string
		cut     bool
		minKept int // bytes of s kept at least
	}{
		{name: "ascii at the limit", s: strings.Repeat("x", MaxAttributeLength)},
		{name: "ascii over the limit", s: strings.Repeat("x", MaxAttributeLength+1), cut: true, minKept: MaxAttributeLength - 32},
		{name: "4-byte runes under the SDK's character limit", s: strings.Repeat("🚀", 2000), cut: true, minKept: MaxAttributeLength - 32},
		{name: "2-byte runes", s: strings.Repeat("ü", 3000), cut: true, minKept: MaxAttributeLength - 32},
		{name: "mixed runes", s: strings.Repeat("e\u0301世🚀ü", 1000), cut: true, minKept: MaxAttributeLength - 32},
		{name: "100 KB", s: strings.Repeat("Grüße, 世界! 🚀 ", 100<<10/20), cut: true, minKept: MaxAttributeLength - 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cut(tt.s)
			if len(got) > MaxAttributeLength || !utf8.ValidString(got) {
				t.Fatalf("cut to %d bytes (%d runes), valid UTF-8 %v; want at most %d bytes", len(got), utf8.RuneCountInString(got), utf8.ValidString(got), MaxAttributeLength)
			}
			if !tt.cut {
				if got != tt.s {
					t.Errorf("a string of %d bytes was cut", len(tt.s))
				}
				return
			}
			kept, _, _ := strings.Cut(got, "… (")
			if !strings.HasPrefix(tt.s, kept) || len(kept) < tt.minKept {
				t.Errorf("kept %d bytes, not a prefix of the text or fewer than %d", len(kept), tt.minKept)
			}
			if want := fmt.Sprintf("… (%d bytes cut)", len(tt.s)-len(kept)); !strings.HasSuffix(got, want) {
				t.Errorf("ends with %q, want %q", got[len(kept):], want)
			}
		})
	}
}

func TestCutList(t *testing.T) {
	rockets := strings.Repeat("🚀", 2000)
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("Insufficient example.com/r%04d-🚀", i)
	}
	kib := make([]string, 10)
	for i := range kib {
		kib[i] = strings.Repeat("ü", 512) // 1024 bytes
	}
	tests := []struct {
		name   string
		values []string
		want   []string
	}{
		{name: "nil", values: nil, want: nil},
		{name: "within", values: many[:maxListValues], want: many[:maxListValues]},
		{name: "one too many", values: many[:maxListValues+1], want: append(slices.Clone(many[:maxListValues-1]), "… and 2 more")},
		{name: "a thousand", values: many, want: append(slices.Clone(many[:maxListValues-1]), "… and 991 more")},
		{name: "one long value", values: []string{rockets}, want: []string{cut(rockets)}},
		{name: "long values", values: []string{rockets, rockets, "short"}, want: []string{cut(rockets), "… and 2 more"}},
		{name: "byte budget", values: kib, want: append(slices.Clone(kib[:4]), "… and 6 more")},
		{name: "value crossing the byte budget", values: []string{kib[0], rockets, "short"}, want: []string{kib[0], record.CutText(rockets, MaxAttributeLength-len(kib[0])), "… and 1 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.values)
			got := cutList(tt.values)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("cutList (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.values); diff != "" {
				t.Errorf("cutList modified its argument (-before +after):\n%s", diff)
			}
			size := 0
			for i, v := range got {
				if len(v) > MaxAttributeLength || !utf8.ValidString(v) {
					t.Errorf("value %d is %d bytes, valid UTF-8 %v", i, len(v), utf8.ValidString(v))
				}
				if i < len(got)-1 || !strings.HasPrefix(v, "… and ") {
					size += len(v)
				}
			}
			if len(got) > maxListValues || size > MaxAttributeLength {
				t.Errorf("%d values of %d bytes, want at most %d values and %d bytes besides the last", len(got), size, maxListValues, MaxAttributeLength)
			}
		})
	}
}

package record

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestCutText(t *testing.T) {
	tests := []struct {
		name string
		s    string
		max  int
		want string
	}{
		{name: "short", s: "Insufficient cpu", max: 16, want: "Insufficient cpu"},
		{name: "empty", s: "", max: 0, want: ""},
		{name: "ascii", s: strings.Repeat("x", 100), max: 30, want: strings.Repeat("x", 11) + "… (89 bytes cut)"},
		// The longest marker, "… (100 bytes cut)", leaves 11 bytes: two
		// 4-byte runes, not two and three quarters.
		{name: "four-byte runes", s: strings.Repeat("🚀", 25), max: 30, want: strings.Repeat("🚀", 2) + "… (92 bytes cut)"},
		{name: "two-byte runes", s: strings.Repeat("ü", 50), max: 30, want: strings.Repeat("ü", 5) + "… (90 bytes cut)"},
		{name: "no room for the marker", s: strings.Repeat("🚀", 10), max: 10, want: strings.Repeat("🚀", 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CutText(tt.s, tt.max)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CutText(%d bytes, %d) (-want +got):\n%s", len(tt.s), tt.max, diff)
			}
			if len(got) > tt.max || !utf8.ValidString(got) {
				t.Errorf("CutText(%d bytes, %d) = %d bytes, valid UTF-8 %v", len(tt.s), tt.max, len(got), utf8.ValidString(got))
			}
		})
	}
}

// TestCutTextBoundsBytes cuts texts of every mix of rune widths at every
// length around MaxTextBytes: the result is never longer than the bound in
// bytes, always valid UTF-8, and a prefix of the text and the marker.
func TestCutTextBoundsBytes(t *testing.T) {
	for _, unit := range []string{"x", "ü", "世", "🚀", "e\u0301🚀ü世"} {
		for n := MaxTextBytes - 8; n <= 4*MaxTextBytes; n += 3 {
			s := strings.Repeat(unit, n/len(unit)+1)[:n]
			s = strings.ToValidUTF8(s, "")
			got := CutText(s, MaxTextBytes)
			if len(got) > MaxTextBytes || !utf8.ValidString(got) {
				t.Fatalf("%q × %d bytes: cut to %d bytes, valid UTF-8 %v", unit, len(s), len(got), utf8.ValidString(got))
			}
			if len(s) <= MaxTextBytes {
				if got != s {
					t.Fatalf("%q × %d bytes: cut although within the bound", unit, len(s))
				}
				continue
			}
			prefix, _, ok := strings.Cut(got, "… (")
			if !ok || !strings.HasPrefix(s, prefix) || !strings.HasSuffix(got, fmt.Sprintf("(%d bytes cut)", len(s)-len(prefix))) {
				t.Fatalf("%q × %d bytes: got %q", unit, len(s), got[max(0, len(got)-40):])
			}
		}
	}
}

func TestCutReasons(t *testing.T) {
	long := strings.Repeat("🚀", 5000)
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("Insufficient example.com/r%04d", i)
	}
	tests := []struct {
		name    string
		reasons []string
		want    []string
	}{
		{name: "nil", reasons: nil, want: nil},
		{name: "within", reasons: []string{"Insufficient cpu", "Insufficient memory"}, want: []string{"Insufficient cpu", "Insufficient memory"}},
		{name: "exactly MaxReasons", reasons: many[:MaxReasons], want: many[:MaxReasons]},
		{name: "one too many", reasons: many[:MaxReasons+1], want: append(append([]string{}, many[:MaxReasons-1]...), "… and 2 more reasons")},
		{name: "a thousand", reasons: many, want: append(append([]string{}, many[:MaxReasons-1]...), "… and 985 more reasons")},
		{name: "long reason", reasons: []string{"ok", long}, want: []string{"ok", CutText(long, MaxTextBytes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]string(nil), tt.reasons...)
			got := CutReasons(tt.reasons)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CutReasons (-want +got):\n%s", diff)
			}
			if len(got) > MaxReasons {
				t.Errorf("%d reasons, more than %d", len(got), MaxReasons)
			}
			for _, r := range got {
				if len(r) > MaxTextBytes {
					t.Errorf("reason of %d bytes, more than %d", len(r), MaxTextBytes)
				}
			}
			if diff := cmp.Diff(in, tt.reasons); diff != "" {
				t.Errorf("CutReasons modified its argument (-before +after):\n%s", diff)
			}
		})
	}
}

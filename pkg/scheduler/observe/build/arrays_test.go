package build

import (
	"slices"
	"testing"
)

// TestResizeZeroesAndReuses: resize returns n zero values, in s's array
// when it has room.
func TestResizeZeroesAndReuses(t *testing.T) {
	s := []int64{1, 2, 3, 4}
	got := resize(s, 3)
	if !slices.Equal(got, []int64{0, 0, 0}) || &got[0] != &s[0] {
		t.Errorf("resize to 3 = %v (own array %v), want 3 zeros in the same array", got, &got[0] == &s[0])
	}
	got = resize(s, 5)
	if !slices.Equal(got, make([]int64, 5)) || &got[0] == &s[0] {
		t.Errorf("resize to 5 = %v (own array %v), want 5 zeros in a new array", got, &got[0] == &s[0])
	}
}

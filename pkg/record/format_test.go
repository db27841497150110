package record

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckFormat(t *testing.T) {
	if err := CheckFormat(FormatVersion); err != nil {
		t.Errorf("the version this build writes: %v", err)
	}
	for _, v := range []int{0, 2, -1} {
		err := CheckFormat(v)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Version != v {
			t.Errorf("version %d: %v, want a *FormatError naming it", v, err)
			continue
		}
		if v != 0 && !strings.Contains(err.Error(), fmt.Sprintf("version %d ", v)) {
			t.Errorf("version %d: %q does not name it", v, err)
		}
		if want := "reads versions [1])"; !strings.Contains(err.Error(), want) {
			t.Errorf("version %d: %q does not say %q", v, err, want)
		}
	}
}

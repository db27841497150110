// Package shadow checks shadow profiles on a real kube-apiserver: a shadow
// identical to its live profile decides as the live profile does.
package shadow

import (
	"fmt"
	"os"
	"testing"

	"github.com/schedscope/schedscope/test/framework"
)

func TestMain(m *testing.M) {
	if _, err := framework.Binary("schedscope-scheduler"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

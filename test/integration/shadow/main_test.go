// Package shadow checks shadow profiles on a real kube-apiserver: a shadow
// identical to its live profile decides as the live profile does, and a
// shadow of another configuration predicts what plain kube-scheduler
// running that configuration decides.
package shadow

import (
	"fmt"
	"os"
	"testing"

	"github.com/schedscope/schedscope/test/framework"
)

func TestMain(m *testing.M) {
	for _, b := range []string{"schedscope-scheduler", "kube-scheduler"} {
		if _, err := framework.Binary(b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

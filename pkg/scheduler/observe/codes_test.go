package observe

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedscope/schedscope/pkg/record"
)

// TestRecordCodesSpellFrameworkCodes checks that the status codes record
// names are the framework's spellings of every code.
func TestRecordCodesSpellFrameworkCodes(t *testing.T) {
	for code, want := range map[fwk.Code]string{
		fwk.Success:                      record.CodeSuccess,
		fwk.Error:                        record.CodeError,
		fwk.Unschedulable:                record.CodeUnschedulable,
		fwk.UnschedulableAndUnresolvable: record.CodeUnschedulableAndUnresolvable,
		fwk.Wait:                         record.CodeWait,
		fwk.Skip:                         record.CodeSkip,
		fwk.Pending:                      record.CodePending,
	} {
		if got := code.String(); got != want {
			t.Errorf("framework code %d is %q, record spells it %q", code, got, want)
		}
	}
}

package app

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	k8sversion "k8s.io/component-base/version"

	"github.com/schedscope/schedscope/pkg/version"
)

// TestPrintVersion checks that --version and --version=raw print
// kube-scheduler's line followed by schedscope's version, and that other
// values print nothing here.
func TestPrintVersion(t *testing.T) {
	info := k8sversion.Get()
	suffix := fmt.Sprintf(" (schedscope %s)\n", version.Version)
	tests := []struct {
		name  string
		args  []string
		want  string
		print bool
	}{
		{name: "no flag", args: nil},
		{name: "version", args: []string{"--version"}, want: "Kubernetes " + info.GitVersion + suffix, print: true},
		{name: "version=true", args: []string{"--version=true"}, want: "Kubernetes " + info.GitVersion + suffix, print: true},
		{name: "version=raw", args: []string{"--version=raw"}, want: fmt.Sprintf("%#v", info) + suffix, print: true},
		{name: "version=false", args: []string{"--version=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := NewSchedulerCommand().Flags()
			// --version is one global flag shared by every command.
			t.Cleanup(func() { _ = fs.Set("version", "false") })
			if err := fs.Set("version", "false"); err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if got := printVersion(&out, fs); got != tt.print {
				t.Errorf("printVersion(%v) = %t, want %t", tt.args, got, tt.print)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("printVersion(%v) output (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

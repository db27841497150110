package app

import (
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/schedscope/schedscope/pkg/scheduler/observe"
)

// TestRecordStreamIsLoopbackByDefault checks the default of
// --record-stream-address, as the flag parses it with no arguments.
func TestRecordStreamIsLoopbackByDefault(t *testing.T) {
	o := NewRecordOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(o.BindAddress)
	if err != nil {
		t.Fatalf("default --record-stream-address %q: %v", o.BindAddress, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("default --record-stream-address %q is not a loopback address", o.BindAddress)
	}
	if o.AllowRemote {
		t.Error("--record-stream-allow-remote is on by default")
	}
	if errs := o.Validate(); len(errs) != 0 {
		t.Errorf("defaults do not validate: %v", errs)
	}
}

// TestRecordStreamRemoteNeedsFlag checks that a non-loopback record stream
// address is refused, with a message naming --record-stream-allow-remote,
// unless that flag is set.
func TestRecordStreamRemoteNeedsFlag(t *testing.T) {
	for _, tt := range []struct {
		addr   string
		remote bool
	}{
		{"127.0.0.1:10262", false},
		{"127.1.2.3:10262", false},
		{"[::1]:10262", false},
		{"localhost:10262", false},
		{":10262", true},
		{"0.0.0.0:10262", true},
		{"[::]:10262", true},
		{"10.0.0.1:10262", true},
		{"192.168.1.10:10262", true},
		{"[fe80::1]:10262", true},
		{"scheduler.example:10262", true},
	} {
		for _, allow := range []bool{false, true} {
			o := NewRecordOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			args := []string{"--record-stream-address=" + tt.addr}
			if allow {
				args = append(args, "--record-stream-allow-remote")
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			errs := o.Validate()
			if !tt.remote || allow {
				if len(errs) != 0 {
					t.Errorf("%v: unexpected errors %v", args, errs)
				}
				continue
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), "--record-stream-allow-remote") || !strings.Contains(errs[0].Error(), "not a loopback address") {
				t.Errorf("%v: want one error saying the address is not loopback and naming --record-stream-allow-remote, got %v", args, errs)
			}
		}
	}
}

// TestTracingFlagsValidate checks that the tracing flags that contradict
// each other, or that would be ignored with tracing off, are refused with
// an error naming them.
func TestTracingFlagsValidate(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		wantErrs []string
	}{
		{args: []string{"--tracing-config-file=t.yaml", "--tracing-cluster-name=east-1", "--tracing-ca-file=ca.crt", "--tracing-client-cert-file=c.crt", "--tracing-client-key-file=c.key"}},
		{args: []string{"--tracing-config-file=t.yaml", "--tracing-insecure"}},
		{args: []string{"--tracing-cluster-name=east-1", "--tracing-insecure"}, wantErrs: []string{
			"--tracing-cluster-name: tracing is off; set --tracing-config-file",
			"--tracing-insecure: tracing is off; set --tracing-config-file",
		}},
		{args: []string{"--tracing-config-file=t.yaml", "--tracing-client-cert-file=c.crt"}, wantErrs: []string{
			"--tracing-client-cert-file and --tracing-client-key-file go together; only one is set",
		}},
		{args: []string{"--tracing-config-file=t.yaml", "--tracing-insecure", "--tracing-ca-file=ca.crt"}, wantErrs: []string{
			"--tracing-insecure: plain text takes no --tracing-ca-file or --tracing-client-cert-file",
		}},
	} {
		o := NewRecordOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, err := range o.Validate() {
			got = append(got, err.Error())
		}
		if diff := cmp.Diff(tt.wantErrs, got); diff != "" {
			t.Errorf("%v: errors (-want +got):\n%s", tt.args, diff)
		}
	}
}

// TestShadowProfileFlag parses the repeatable --shadow-profile and
// --shadow-sample-every, and refuses what they cannot mean.
func TestShadowProfileFlag(t *testing.T) {
	for _, tt := range []struct {
		args        []string
		want        []observe.Shadow
		wantEvery   int
		wantParse   string
		wantInvalid []string
	}{
		{args: nil, wantEvery: 1},
		{
			args:      []string{"--shadow-profile=binpack=default-scheduler", "--shadow-profile=spread=default-scheduler", "--shadow-sample-every=10"},
			want:      []observe.Shadow{{Name: "binpack", Live: "default-scheduler"}, {Name: "spread", Live: "default-scheduler"}},
			wantEvery: 10,
		},
		{args: []string{"--shadow-profile=binpack"}, wantParse: `"binpack" is not <shadow schedulerName>=<live schedulerName>`},
		{args: []string{"--shadow-profile==default-scheduler"}, wantParse: `"=default-scheduler" is not <shadow schedulerName>=<live schedulerName>`},
		{args: []string{"--shadow-sample-every=0"}, wantEvery: 0, wantInvalid: []string{"--shadow-sample-every: must be at least 1, got 0"}},
	} {
		o := NewRecordOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		err := fs.Parse(tt.args)
		if tt.wantParse != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantParse) {
				t.Errorf("%v: parse error %v, want one saying %s", tt.args, err, tt.wantParse)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if diff := cmp.Diff(tt.want, o.Shadows); diff != "" || o.ShadowSampleEvery != tt.wantEvery {
			t.Errorf("%v: sample every %d, shadows (-want +got):\n%s", tt.args, o.ShadowSampleEvery, diff)
		}
		var got []string
		for _, err := range o.Validate() {
			got = append(got, err.Error())
		}
		if diff := cmp.Diff(tt.wantInvalid, got); diff != "" {
			t.Errorf("%v: errors (-want +got):\n%s", tt.args, diff)
		}
	}
}

// TestValidateShadowsNamesTheProfile checks the shadows against the
// configuration's profiles: each error names the flag and the profile.
func TestValidateShadowsNamesTheProfile(t *testing.T) {
	profiles := []config.KubeSchedulerProfile{{SchedulerName: "default-scheduler"}, {SchedulerName: "binpack"}}
	o := NewRecordOptions()
	o.Shadows = []observe.Shadow{{Name: "binpack", Live: "default-scheduler"}, {Name: "spread", Live: "default-scheduler"}}
	var got []string
	for _, err := range o.validateShadows(profiles) {
		got = append(got, err.Error())
	}
	want := []string{`--shadow-profile: shadow profile "spread": no profile has that schedulerName`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

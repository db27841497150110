package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--store=sqlite://" + filepath.Join(dir, "records.db")}
	tokenFile, caFile := filepath.Join(dir, "stream-token"), filepath.Join(dir, "stream-ca.crt")
	for _, f := range []string{tokenFile, caFile} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const httpsStream = "--stream-url=https://scheduler.example:10262/v1/records"
	tests := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{name: "defaults with a db path", args: nil},
		{name: "stream url scheme", args: []string{"--stream-url=ftp://x/v1/records"}, wantErr: []string{"--stream-url"}},
		{name: "stream url empty", args: []string{"--stream-url="}, wantErr: []string{"--stream-url is required"}},
		{name: "stream token over https", args: []string{httpsStream, "--stream-token-file=" + tokenFile, "--stream-ca-file=" + caFile}},
		{name: "stream token over http", args: []string{"--stream-token-file=" + tokenFile}, wantErr: []string{"--stream-token-file: a token is sent over https only", "is not https"}},
		{name: "stream token file missing", args: []string{httpsStream, "--stream-token-file=" + filepath.Join(dir, "nope")}, wantErr: []string{"--stream-token-file"}},
		{name: "stream ca file missing", args: []string{httpsStream, "--stream-ca-file=" + filepath.Join(dir, "nope")}, wantErr: []string{"--stream-ca-file"}},
		{name: "db dir missing", args: []string{"--store=sqlite://" + filepath.Join(dir, "nope", "db")}, wantErr: []string{"--store", "its directory"}},
		{name: "sqlite path relative", args: []string{"--store=sqlite://records.db"}, wantErr: []string{"a SQLite store is sqlite:///ABSOLUTE/PATH"}},
		{name: "store scheme", args: []string{"--store=mysql://db/records"}, wantErr: []string{"--store", "the scheme must be sqlite or postgres"}},
		{name: "postgres", args: []string{"--store=postgres://schedscope@db.example:5432/schedscope?sslmode=verify-full"}},
		{name: "postgres url hides its password", args: []string{"--store=postgres://u:secret@db.example/x?sslmode=sometimes"}, wantErr: []string{"not a PostgreSQL connection URL", "u:xxxxx@", "sslmode is invalid"}},
		{name: "postgres url names its cause", args: []string{"--store=postgres://u:secret@db.example/x?sslmode=verify-full&sslrootcert=" + filepath.Join(dir, "nope.crt")}, wantErr: []string{"not a PostgreSQL connection URL", filepath.Join(dir, "nope.crt"), "no such file or directory"}},
		{name: "postgres password in the query", args: []string{"--store=postgres://db.example/x?password=secret&sslmode=sometimes"}, wantErr: []string{"sslmode is invalid"}},
		{name: "both store flags", args: []string{"--store=postgres://db.example/x", "--db-path=" + filepath.Join(dir, "records.db")}, wantErr: []string{"--db-path is the old form of --store=sqlite:///PATH"}},
		{name: "cluster name", args: []string{"--cluster-name=east-1"}},
		{name: "cluster name not a label", args: []string{"--cluster-name=East_1"}, wantErr: []string{"--cluster-name", `cluster name "East_1" is not a DNS-1123 label`}},
		{name: "negative age", args: []string{"--retention-max-age=-1h"}, wantErr: []string{"--retention-max-age"}},
		{name: "negative cluster silence", args: []string{"--retention-remove-silent-clusters-after=-1h"}, wantErr: []string{"--retention-remove-silent-clusters-after -1h0m0s must not be negative"}},
		{name: "negative bytes", args: []string{"--retention-max-bytes=-1"}, wantErr: []string{"--retention-max-bytes"}},
		{name: "per-namespace count fits the bytes", args: []string{"--retention-max-bytes=1073741824", "--retention-max-attempts-per-namespace=56252"}},
		{name: "per-namespace count over the bytes", args: []string{"--retention-max-bytes=1073741824", "--retention-max-attempts-per-namespace=56253"}, wantErr: []string{"--retention-max-attempts-per-namespace 56253 does not fit --retention-max-bytes 1073741824", "at most 56252 attempts do"}},
		{name: "per-namespace count without a byte bound", args: []string{"--retention-max-bytes=0", "--retention-max-attempts-per-namespace=10000000"}},
		{name: "default per-namespace count over a lower byte bound", args: []string{"--retention-max-bytes=536870912"}, wantErr: []string{"--retention-max-attempts-per-namespace 100000 does not fit"}},
		{name: "zero interval", args: []string{"--retention-interval=0s"}, wantErr: []string{"--retention-interval"}},
		{name: "no request per user", args: []string{"--max-requests-in-flight-per-user=0"}, wantErr: []string{"--max-requests-in-flight-per-user 0 must be at least 1"}},
		{name: "no request at all", args: []string{"--max-requests-in-flight=0"}, wantErr: []string{"--max-requests-in-flight 0 must be at least 1"}},
		{name: "no read connection", args: []string{"--store-max-read-connections=0"}, wantErr: []string{"--store-max-read-connections 0 must be at least 1"}},
		{name: "zero query timeout", args: []string{"--query-timeout=0s"}, wantErr: []string{"--query-timeout 0s must be positive"}},
		{name: "negative rejections window", args: []string{"--max-rejections-window=-1h"}, wantErr: []string{"--max-rejections-window -1h0m0s must be positive"}},
		{name: "reader limits", args: []string{"--max-requests-in-flight=32", "--store-max-read-connections=8", "--query-timeout=30s", "--max-rejections-window=720h"}},
		{name: "jaeger url", args: []string{"--jaeger-url=jaeger:16686"}, wantErr: []string{"--jaeger-url"}},
		{name: "trace url template", args: []string{"--trace-url-template=https://grafana.example/explore?trace={traceID}"}},
		{name: "trace url template without id", args: []string{"--trace-url-template=https://tempo.example/trace/"}, wantErr: []string{"--trace-url-template", "has no {traceID}"}},
		{name: "trace url template and jaeger url", args: []string{"--trace-url-template=https://tempo.example/{traceID}", "--jaeger-url=https://jaeger.example"}, wantErr: []string{"--trace-url-template and --jaeger-url both set"}},
		{name: "health url", args: []string{"--scheduler-health-url=://"}, wantErr: []string{"--scheduler-health-url"}},
		{name: "probe disabled", args: []string{"--scheduler-health-url=", "--scheduler-ready-url="}},
		{name: "ca file missing", args: []string{"--scheduler-ca-file=" + filepath.Join(dir, "ca.crt")}, wantErr: []string{"--scheduler-ca-file"}},
		{name: "secure port", args: []string{"--secure-port=70000"}, wantErr: []string{"--secure-port"}},
		{
			name:    "every error is reported",
			args:    []string{"--stream-url=x", "--retention-max-attempts=-3"},
			wantErr: []string{"--stream-url", "--retention-max-attempts"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(append(append([]string{}, base...), tt.args...)); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one naming %v", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q repeats a password", err)
			}
		})
	}
}

// TestDBPathIsStore: the deprecated --db-path still names a SQLite store.
func TestDBPathIsStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.db")
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--db-path=" + path}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if want := "sqlite://" + path; o.Store != want {
		t.Errorf("--store %q, want %q", o.Store, want)
	}
}

// TestPostgresTLSRequired: a PostgreSQL store off this machine must verify
// the server's certificate, unless --postgres-allow-insecure says otherwise.
func TestPostgresTLSRequired(t *testing.T) {
	const refused = "which does not verify the server: add sslmode=verify-full and sslrootcert="
	tests := []struct {
		name        string
		store       string
		pgSSLMode   string
		allow       bool
		wantRefused bool
	}{
		{name: "remote verify-full", store: "postgres://u@db.example:5432/x?sslmode=verify-full"},
		{name: "remote verify-ca", store: "postgres://u@db.example/x?sslmode=verify-ca"},
		{name: "remote without sslmode (prefer)", store: "postgres://u@db.example/x", wantRefused: true},
		{name: "remote disable", store: "postgres://u@db.example/x?sslmode=disable", wantRefused: true},
		{name: "remote allow", store: "postgres://u@db.example/x?sslmode=allow", wantRefused: true},
		{name: "remote require", store: "postgres://u@db.example/x?sslmode=require", wantRefused: true},
		{name: "remote IP disable", store: "postgres://u@10.0.0.5/x?sslmode=disable", wantRefused: true},
		{name: "remote IPv6 require", store: "postgres://u@[2001:db8::1]:5432/x?sslmode=require", wantRefused: true},
		{name: "remote disable allowed by the flag", store: "postgres://u@db.example/x?sslmode=disable", allow: true},
		{name: "remote prefer allowed by the flag", store: "postgres://u@db.example/x", allow: true},
		{name: "PGSSLMODE verify-full", store: "postgres://u@db.example/x", pgSSLMode: "verify-full"},
		{name: "URL's sslmode wins over PGSSLMODE", store: "postgres://u@db.example/x?sslmode=require", pgSSLMode: "verify-full", wantRefused: true},
		{name: "one remote host among loopback ones", store: "postgres://u@127.0.0.1:5432,db.example:5432/x?sslmode=disable", wantRefused: true},
		{name: "127.0.0.1 disable", store: "postgres://u@127.0.0.1:5432/x?sslmode=disable"},
		{name: "127.0.0.0/8 disable", store: "postgres://u@127.1.2.3/x?sslmode=disable"},
		{name: "::1 disable", store: "postgres://u@[::1]:5432/x?sslmode=disable"},
		{name: "localhost prefer", store: "postgres://u@localhost/x"},
		{name: "Unix socket as host parameter", store: "postgres:///x?host=/var/run/postgresql&sslmode=disable"},
		{name: "sqlite", store: "sqlite://" + filepath.Join(t.TempDir(), "records.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PGSSLMODE", tt.pgSSLMode)
			t.Setenv("PGHOST", "")
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			args := []string{"--store=" + tt.store}
			if tt.allow {
				args = append(args, "--postgres-allow-insecure")
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if got := err != nil && strings.Contains(err.Error(), refused); got != tt.wantRefused {
				t.Fatalf("Validate() = %v; refused for TLS: %v, want %v", err, got, tt.wantRefused)
			}
			if !tt.wantRefused && err != nil {
				t.Fatalf("Validate() = %v, want no error", err)
			}
			if tt.wantRefused && !strings.Contains(err.Error(), "--postgres-allow-insecure") {
				t.Errorf("Validate() = %v, want it to name --postgres-allow-insecure", err)
			}
		})
	}
}

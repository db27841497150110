// Package chart renders the Helm chart (charts/schedscope) with `helm
// template` (bin/helm) and checks, without a cluster, what each value
// renders and which values it refuses. test/integration/manifests applies
// the renderings to a real kube-apiserver.
package chart

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/schedscope/schedscope/cmd/schedscope-sidecar/app"
	"github.com/schedscope/schedscope/test/framework"
)

// TestInvalidValues checks that values that cannot work, alone
// (values.schema.json) or together (the templates), fail to render with a
// message naming them.
func TestInvalidValues(t *testing.T) {
	tests := []struct {
		name    string
		set     []string
		wantErr string
	}{
		{"replicas without leader election", []string{"scheduler.replicas=2", "scheduler.leaderElection.enabled=false"}, "scheduler.replicas > 1 needs scheduler.leaderElection.enabled"},
		{"replicas sharing one claim", []string{"scheduler.replicas=2", "sidecar.persistence.enabled=true"}, "sidecar.persistence.enabled needs scheduler.replicas 1"},
		{"tracing without endpoint", []string{"tracing.enabled=true"}, "tracing.enabled needs tracing.endpoint"},
		{"per-namespace count over the byte bound", []string{"sidecar.retention.maxBytes=536870912"}, "sidecar.retention.maxAttemptsPerNamespace 50000 does not fit sidecar.retention.maxBytes 536870912: at 19088 bytes on disk per attempt of a busy cluster, at most 28126 attempts do"},
		{"plain and TLS tracing", []string{"tracing.enabled=true", "tracing.endpoint=c:4317", "tracing.insecure=true", "tracing.tlsSecret=ca"}, "tracing.insecure is plain gRPC and excludes tracing.tlsSecret"},
		{"client certificate without Secret", []string{"tracing.enabled=true", "tracing.endpoint=c:4317", "tracing.clientCertificate=true"}, "tracing.clientCertificate needs tracing.tlsSecret"},
		{"unknown certificate source", []string{"apiService.certificate.source=insecure"}, "at '/apiService/certificate/source': value must be one of 'generate', 'certManager', 'secret'"},
		{"misspelt value", []string{"schedular.replicas=2"}, "additional properties 'schedular' not allowed"},
		{"value of the wrong type", []string{"scheduler.replicas=two"}, "at '/scheduler/replicas': got string, want integer"},
		{"flag without dashes", []string{"scheduler.extraArgs={record-buffer-size=4000}"}, "at '/scheduler/extraArgs/0'"},
		{"secret without its CA", []string{"apiService.certificate.source=secret", "apiService.certificate.secretName=x"}, "needs apiService.certificate.caBundle"},
		{"cluster name not a label", []string{"sidecar.clusterName=East_1"}, "at '/sidecar/clusterName'"},
		{"secret without a name", []string{"apiService.certificate.source=secret", "apiService.certificate.caBundle=x"}, "apiService.certificate.secretName is required"},
		{"API replicas sharing a SQLite file", []string{"api.enabled=true"}, "at '/sidecar/store/type': value must be 'postgres'"},
		{"postgres without its Secret", []string{"sidecar.store.type=postgres"}, "at '/sidecar/store/postgres/secretName'"},
		{"unknown store", []string{"sidecar.store.type=mysql"}, "at '/sidecar/store/type': value must be one of 'sqlite', 'postgres'"},
		{"postgres with the SQLite volume", []string{"sidecar.store.type=postgres", "sidecar.store.postgres.secretName=pg", "sidecar.persistence.enabled=true"}, "sidecar.persistence.enabled is the SQLite file's volume"},
		{"environment variable without a name", []string{"scheduler.extraEnv[0].value=1"}, "at '/scheduler/extraEnv/0': missing property 'name'"},
		{"volume mount without a path", []string{"sidecar.extraVolumeMounts[0].name=extra"}, "at '/sidecar/extraVolumeMounts/0': missing property 'mountPath'"},
		{"volume without a name", []string{"extraVolumes[0].emptyDir.medium=Memory"}, "at '/extraVolumes/0': missing property 'name'"},
		{"spread without a topology key", []string{"topologySpreadConstraints[0].maxSkew=1"}, "at '/topologySpreadConstraints/0': missing properties 'topologyKey', 'whenUnsatisfiable'"},
		{"authorization type without credentials", []string{"serviceMonitor.authorization.type=Bearer"}, "at '/serviceMonitor/authorization': properties 'credentials' required"},
		{"credentials without a key", []string{"serviceMonitor.authorization.credentials.name=prometheus-token"}, "at '/serviceMonitor/authorization/credentials': missing property 'key'"},
		{"global not an object", []string{"global=3"}, "at '/global': got number, want object"},
		{"test image tag not a string", []string{"test.image.tag=1"}, "at '/test/image/tag'"},
		{"cluster label not a label name", []string{"prometheusRule.clusterLabel=k8s-cluster"}, "at '/prometheusRule/clusterLabel'"},
		{"selector with its braces", []string{"prometheusRule.schedulerSelector=up{job=\"x\"}"}, "at '/prometheusRule/schedulerSelector'"},
		{"runbook URL not a URL", []string{"prometheusRule.runbookURL=docs/runbooks.md"}, "at '/prometheusRule/runbookURL'"},
		{"scratch size not a quantity", []string{"scheduler.tmpSizeLimit=64 MB"}, "at '/scheduler/tmpSizeLimit'"},
		{"API source not a CIDR", []string{"networkPolicy.apiServer.cidrs={10.0.0.1}"}, "at '/networkPolicy/apiServer/cidrs/0'"},
		{"misspelt metrics source", []string{"networkPolicy.metrics.from[0].namespaceSelectr.matchLabels.a=b"}, "at '/networkPolicy/metrics/from/0': additional properties 'namespaceSelectr' not allowed"},
		{"shadow naming no profile", []string{"scheduler.shadows[0].profile=binpack-candidate", "scheduler.shadows[0].of=schedscope"}, `scheduler.shadows: shadow profile "binpack-candidate": no profile of scheduler.config has that schedulerName (its profiles: schedscope, schedscope-binpack)`},
		{"shadow of no profile", []string{"scheduler.shadows[0].profile=schedscope-binpack", "scheduler.shadows[0].of=default-scheduler"}, `scheduler.shadows: shadow profile "schedscope-binpack": its live profile "default-scheduler" is not a profile of scheduler.config`},
		{"shadow of itself", []string{"scheduler.shadows[0].profile=schedscope", "scheduler.shadows[0].of=schedscope"}, `scheduler.shadows: shadow profile "schedscope": shadows itself`},
		{"shadow declared twice", []string{
			"scheduler.shadows[0].profile=schedscope-binpack", "scheduler.shadows[0].of=schedscope",
			"scheduler.shadows[1].profile=schedscope-binpack", "scheduler.shadows[1].of=schedscope",
		}, `scheduler.shadows: shadow profile "schedscope-binpack": declared more than once`},
		{"shadow of a shadow", []string{
			"scheduler.shadows[0].profile=schedscope-binpack", "scheduler.shadows[0].of=schedscope",
			"scheduler.shadows[1].profile=schedscope", "scheduler.shadows[1].of=schedscope-binpack",
		}, `scheduler.shadows: shadow profile "schedscope-binpack": its live profile "schedscope" is itself a shadow`},
		{"shadow without its live profile", []string{"scheduler.shadows[0].profile=schedscope-binpack"}, "at '/scheduler/shadows/0': missing property 'of'"},
		{"shadows sampled every 0th attempt", []string{"scheduler.shadowSampleEvery=0"}, "at '/scheduler/shadowSampleEvery'"},
		{"ServiceMonitor without the sidecar's CA", []string{"apiService.enabled=false", "apiService.certificate.source=secret", "apiService.certificate.secretName=x", "serviceMonitor.enabled=true"}, "serviceMonitor.enabled with apiService.certificate.source secret needs apiService.certificate.caBundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := framework.RenderChart("schedscope", nil, tt.set...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("helm template --set %v: got error %v, want one saying %q", tt.set, err, tt.wantErr)
			}
		})
	}
}

// render renders the chart as release in namespace schedscope with the
// --set values given.
func render(t *testing.T, release string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := framework.RenderRelease(release, "schedscope", nil, set...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.DecodeYAML(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the object of kind named name, failing the test without one.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

// slice returns the list at fields of obj (nil when absent).
func slice(obj map[string]any, fields ...string) []any {
	l, _, _ := unstructured.NestedSlice(obj, fields...)
	return l
}

// container returns the container named name of the Deployment.
func container(t *testing.T, deploy *unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	for _, c := range slice(deploy.Object, "spec", "template", "spec", "containers") {
		if c := c.(map[string]any); c["name"] == name {
			return c
		}
	}
	t.Fatalf("Deployment %s has no container %s", deploy.GetName(), name)
	return nil
}

// names returns the field name of each element of list.
func names(list []any) []string {
	var n []string
	for _, e := range list {
		n = append(n, e.(map[string]any)["name"].(string))
	}
	return n
}

// TestValues checks what each of the chart's extension values renders,
// beside what the defaults render.
func TestValues(t *testing.T) {
	tests := []struct {
		name  string
		set   []string
		check func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{
			name: "defaults: no extra env, volumes or spread; Prometheus's own token",
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				deploy := find(t, objs, "Deployment", "schedscope")
				if env := slice(container(t, deploy, "scheduler"), "env"); env != nil {
					t.Errorf("scheduler env %v, want none", env)
				}
				if env := slice(container(t, deploy, "sidecar"), "env"); env != nil {
					t.Errorf("sidecar env %v, want none", env)
				}
				if got := slice(deploy.Object, "spec", "template", "spec", "topologySpreadConstraints"); got != nil {
					t.Errorf("topologySpreadConstraints %v, want none", got)
				}
				want := []string{"config", "data", "tls", "scheduler-tmp", "sidecar-tmp", "scheduler-token", "sidecar-token"}
				if diff := cmp.Diff(want, names(slice(deploy.Object, "spec", "template", "spec", "volumes"))); diff != "" {
					t.Errorf("volumes (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "global, as an umbrella chart passes it",
			set:  []string{"global.foo=bar", "global.imageRegistry=registry.example.com"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				find(t, objs, "Deployment", "schedscope")
			},
		},
		{
			name: "extra env of each container, after the chart's own",
			set: []string{
				"scheduler.extraEnv[0].name=GOMEMLIMIT", "scheduler.extraEnv[0].value=900MiB",
				"sidecar.extraEnv[0].name=GODEBUG", "sidecar.extraEnv[0].value=http2client=0",
				"tracing.enabled=true", "tracing.endpoint=collector:4317",
				"sidecar.store.type=postgres", "sidecar.store.postgres.secretName=pg",
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				deploy := find(t, objs, "Deployment", "schedscope")
				scheduler := slice(container(t, deploy, "scheduler"), "env")
				if diff := cmp.Diff([]string{"POD_NAME", "POD_NAMESPACE", "NODE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "GOMEMLIMIT"}, names(scheduler)); diff != "" {
					t.Errorf("scheduler env (-want +got):\n%s", diff)
				}
				if got := scheduler[len(scheduler)-1].(map[string]any)["value"]; got != "900MiB" {
					t.Errorf("GOMEMLIMIT = %v, want 900MiB", got)
				}
				sidecar := slice(container(t, deploy, "sidecar"), "env")
				if diff := cmp.Diff([]string{"SCHEDSCOPE_STORE", "PGPASSWORD", "GODEBUG"}, names(sidecar)); diff != "" {
					t.Errorf("sidecar env (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "PostgreSQL verified with caSecret; an unverified one only with allowInsecure",
			set: []string{
				"sidecar.store.type=postgres", "sidecar.store.postgres.secretName=pg", "sidecar.store.postgres.caSecret=pg-ca",
				"sidecar.store.postgres.allowInsecure=true", "api.enabled=true",
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, c := range []map[string]any{
					container(t, find(t, objs, "Deployment", "schedscope"), "sidecar"),
					container(t, find(t, objs, "Deployment", "schedscope-api"), "api"),
				} {
					env := map[string]any{}
					for _, e := range slice(c, "env") {
						env[e.(map[string]any)["name"].(string)] = e.(map[string]any)["value"]
					}
					if env["PGSSLROOTCERT"] != "/etc/schedscope/postgres-ca/ca.crt" || env["PGSSLMODE"] != "verify-full" {
						t.Errorf("%s env %v, want PGSSLROOTCERT naming the CA and PGSSLMODE verify-full", c["name"], env)
					}
					if !slices.Contains(slice(c, "args"), any("--postgres-allow-insecure")) {
						t.Errorf("%s args %v, want --postgres-allow-insecure", c["name"], slice(c, "args"))
					}
				}
			},
		},
		{
			name: "PostgreSQL without allowInsecure",
			set:  []string{"sidecar.store.type=postgres", "sidecar.store.postgres.secretName=pg", "api.enabled=true"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, c := range []map[string]any{
					container(t, find(t, objs, "Deployment", "schedscope"), "sidecar"),
					container(t, find(t, objs, "Deployment", "schedscope-api"), "api"),
				} {
					if args := slice(c, "args"); slices.Contains(args, any("--postgres-allow-insecure")) {
						t.Errorf("%s args %v, want no --postgres-allow-insecure", c["name"], args)
					}
				}
			},
		},
		{
			name: "extra env alone",
			set:  []string{"sidecar.extraEnv[0].name=GOMEMLIMIT", "sidecar.extraEnv[0].value=900MiB"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				deploy := find(t, objs, "Deployment", "schedscope")
				if got := slice(container(t, deploy, "scheduler"), "env"); got != nil {
					t.Errorf("scheduler env %v, want none", got)
				}
				want := []any{map[string]any{"name": "GOMEMLIMIT", "value": "900MiB"}}
				if diff := cmp.Diff(want, slice(container(t, deploy, "sidecar"), "env")); diff != "" {
					t.Errorf("sidecar env (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "extra volumes and each container's mounts",
			set: []string{
				"extraVolumes[0].name=extra-ca", "extraVolumes[0].configMap.name=extra-ca",
				"scheduler.extraVolumeMounts[0].name=extra-ca", "scheduler.extraVolumeMounts[0].mountPath=/etc/extra-ca",
				"sidecar.extraVolumeMounts[0].name=extra-ca", "sidecar.extraVolumeMounts[0].mountPath=/etc/ssl/certs",
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				deploy := find(t, objs, "Deployment", "schedscope")
				volumes := slice(deploy.Object, "spec", "template", "spec", "volumes")
				if got := volumes[len(volumes)-1]; !cmp.Equal(got, map[string]any{"name": "extra-ca", "configMap": map[string]any{"name": "extra-ca"}}) {
					t.Errorf("last volume %v, want extra-ca", got)
				}
				for c, path := range map[string]string{"scheduler": "/etc/extra-ca", "sidecar": "/etc/ssl/certs"} {
					mounts := slice(container(t, deploy, c), "volumeMounts")
					if got := mounts[len(mounts)-1]; !cmp.Equal(got, map[string]any{"name": "extra-ca", "mountPath": path}) {
						t.Errorf("%s's last mount %v, want extra-ca at %s", c, got, path)
					}
				}
			},
		},
		{
			name: "topologySpreadConstraints",
			set: []string{
				"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
				"topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				deploy := find(t, objs, "Deployment", "schedscope")
				want := []any{map[string]any{"maxSkew": int64(1), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}}
				if diff := cmp.Diff(want, slice(deploy.Object, "spec", "template", "spec", "topologySpreadConstraints")); diff != "" {
					t.Errorf("topologySpreadConstraints (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "ServiceMonitor with Prometheus's own token",
			set:  []string{"serviceMonitor.enabled=true"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, e := range slice(find(t, objs, "ServiceMonitor", "schedscope").Object, "spec", "endpoints") {
					e := e.(map[string]any)
					if e["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" || e["authorization"] != nil {
						t.Errorf("endpoint %v: want bearerTokenFile and no authorization", e["port"])
					}
				}
			},
		},
		{
			name: "ServiceMonitor with authorization from a Secret",
			set: []string{
				"serviceMonitor.enabled=true", "serviceMonitor.authorization.type=Bearer",
				"serviceMonitor.authorization.credentials.name=prometheus-token", "serviceMonitor.authorization.credentials.key=token",
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				want := map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prometheus-token", "key": "token"}}
				endpoints := slice(find(t, objs, "ServiceMonitor", "schedscope").Object, "spec", "endpoints")
				if len(endpoints) != 2 {
					t.Fatalf("%d endpoints, want 2", len(endpoints))
				}
				for _, e := range endpoints {
					e := e.(map[string]any)
					if diff := cmp.Diff(want, e["authorization"]); diff != "" {
						t.Errorf("endpoint %v: authorization (-want +got):\n%s", e["port"], diff)
					}
					if _, ok := e["bearerTokenFile"]; ok {
						t.Errorf("endpoint %v: bearerTokenFile beside authorization", e["port"])
					}
				}
			},
		},
		{
			name: "no shadows: no shadow flags",
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if got := shadowArgs(t, objs); got != nil {
					t.Errorf("the scheduler's shadow flags %v, want none", got)
				}
			},
		},
		{
			name: "shadows: a --shadow-profile each, in order, and --shadow-sample-every",
			set: []string{
				// --set replaces the whole list of profiles.
				"scheduler.config.profiles[0].schedulerName=schedscope",
				"scheduler.config.profiles[1].schedulerName=schedscope-binpack",
				"scheduler.config.profiles[2].schedulerName=schedscope-spread",
				"scheduler.shadows[0].profile=schedscope-binpack", "scheduler.shadows[0].of=schedscope",
				"scheduler.shadows[1].profile=schedscope-spread", "scheduler.shadows[1].of=schedscope",
				"scheduler.shadowSampleEvery=10",
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				want := []string{"--shadow-profile=schedscope-binpack=schedscope", "--shadow-profile=schedscope-spread=schedscope", "--shadow-sample-every=10"}
				if diff := cmp.Diff(want, shadowArgs(t, objs)); diff != "" {
					t.Errorf("the scheduler's shadow flags (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:  "retention: the defaults' bounds agree, and 0 is no bound",
			check: sidecarAcceptsRetention("--retention-max-bytes=1073741824", "--retention-max-attempts=0", "--retention-max-attempts-per-namespace=50000"),
		},
		{
			name:  "retention: a per-namespace count that fits a lower byte bound",
			set:   []string{"sidecar.retention.maxBytes=536870912", "sidecar.retention.maxAttemptsPerNamespace=28000", "sidecar.retention.maxAttempts=200000"},
			check: sidecarAcceptsRetention("--retention-max-bytes=536870912", "--retention-max-attempts=200000", "--retention-max-attempts-per-namespace=28000"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, render(t, "schedscope", tt.set...))
		})
	}
}

// shadowArgs returns the scheduler's --shadow-* flags, in order.
func shadowArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var got []string
	for _, arg := range slice(container(t, find(t, objs, "Deployment", "schedscope"), "scheduler"), "args") {
		if arg := arg.(string); strings.HasPrefix(arg, "--shadow-") {
			got = append(got, arg)
		}
	}
	return got
}

// sidecarAcceptsRetention checks that the sidecar's retention flags are
// want and that the sidecar's options validate them.
func sidecarAcceptsRetention(want ...string) func(t *testing.T, objs []*unstructured.Unstructured) {
	return func(t *testing.T, objs []*unstructured.Unstructured) {
		var got []string
		for _, arg := range slice(container(t, find(t, objs, "Deployment", "schedscope"), "sidecar"), "args") {
			if arg := arg.(string); strings.HasPrefix(arg, "--retention-max-") && !strings.HasPrefix(arg, "--retention-max-age=") {
				got = append(got, arg)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the sidecar's retention bounds (-want +got):\n%s", diff)
		}
		o := app.NewOptions()
		fs := pflag.NewFlagSet("sidecar", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(append([]string{"--store=sqlite://" + filepath.Join(t.TempDir(), "records.db")}, got...)); err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("the sidecar refuses the chart's retention flags %v: %v", got, err)
		}
	}
}

// TestNames checks that every object's name starts with the release's full
// name (release name, nameOverride, fullnameOverride), that the objects
// refer to each other by those names, and that the sidecar's certificate
// covers its Service's.
func TestNames(t *testing.T) {
	tests := []struct {
		release  string
		set      []string
		fullname string
		name     string
	}{
		{release: "schedscope", fullname: "schedscope", name: "schedscope"},
		{release: "schedscope-east", fullname: "schedscope-east", name: "schedscope"},
		{release: "lens", fullname: "lens-schedscope", name: "schedscope"},
		{release: "lens", set: []string{"nameOverride=decisions"}, fullname: "lens-decisions", name: "decisions"},
		{release: "lens", set: []string{"fullnameOverride=scheduling"}, fullname: "scheduling", name: "schedscope"},
	}
	for _, tt := range tests {
		t.Run(tt.release+" "+strings.Join(tt.set, " "), func(t *testing.T) {
			objs := render(t, tt.release, tt.set...)
			for _, o := range objs {
				if n := o.GetName(); o.GetKind() != "APIService" && n != tt.fullname && !strings.HasPrefix(n, tt.fullname+"-") && !strings.HasPrefix(n, tt.fullname+":") {
					t.Errorf("%s %s: name does not start with %s", o.GetKind(), n, tt.fullname)
				}
				if o.GetKind() != "Pod" {
					if got := o.GetLabels()["app.kubernetes.io/name"]; got != tt.name {
						t.Errorf("%s %s: label app.kubernetes.io/name %q, want %q", o.GetKind(), o.GetName(), got, tt.name)
					}
				}
			}
			deploy := find(t, objs, "Deployment", tt.fullname)
			if got, _, _ := unstructured.NestedString(deploy.Object, "spec", "template", "spec", "serviceAccountName"); got != tt.fullname {
				t.Errorf("serviceAccountName %q, want %q", got, tt.fullname)
			}
			find(t, objs, "ServiceAccount", tt.fullname+"-sidecar")
			find(t, objs, "ConfigMap", tt.fullname+"-scheduler-config")
			find(t, objs, "ClusterRole", tt.fullname+":explain-reader")
			svc := find(t, objs, "Service", tt.fullname+"-sidecar")
			selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
			podLabels, _, _ := unstructured.NestedStringMap(deploy.Object, "spec", "template", "metadata", "labels")
			for k, v := range selector {
				if podLabels[k] != v {
					t.Errorf("Service selects %s=%s, the pod has %q", k, v, podLabels[k])
				}
			}
			if got, _, _ := unstructured.NestedString(find(t, objs, "APIService", "v1alpha1.schedscope.io").Object, "spec", "service", "name"); got != tt.fullname+"-sidecar" {
				t.Errorf("APIService's Service %q, want %s-sidecar", got, tt.fullname)
			}
			for _, b := range objs {
				if b.GetKind() != "ClusterRoleBinding" && b.GetKind() != "RoleBinding" {
					continue
				}
				for _, s := range slice(b.Object, "subjects") {
					if s := s.(map[string]any); s["kind"] == "ServiceAccount" && !strings.HasPrefix(s["name"].(string), tt.fullname) {
						t.Errorf("%s %s binds ServiceAccount %v", b.GetKind(), b.GetName(), s["name"])
					}
				}
			}
			crt, _, _ := unstructured.NestedString(find(t, objs, "Secret", tt.fullname+"-sidecar-tls").Object, "data", "tls.crt")
			if dns := certificateDNSNames(t, crt); !slices.Contains(dns, tt.fullname+"-sidecar.schedscope.svc") {
				t.Errorf("the sidecar's certificate covers %v, not %s-sidecar.schedscope.svc", dns, tt.fullname)
			}
		})
	}
}

// certificateDNSNames decodes a base64 PEM certificate's DNS names.
func certificateDNSNames(t *testing.T, b64 string) []string {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("tls.crt holds no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.DNSNames
}

// TestHelmTest checks the helm test hook: a pod running kubectl-schedscope
// from the sidecar's image (or test.image), status and pending in the
// release's namespace through the APIService, as an account bound to the
// role that may read the status and to a role in the namespace that may
// list its pending pods and pods alone, with labels the sidecar's Service
// does not select; none without the APIService.
func TestHelmTest(t *testing.T) {
	objs := render(t, "schedscope")
	var hooks []string
	for _, o := range objs {
		if o.GetAnnotations()["helm.sh/hook"] == "test" {
			hooks = append(hooks, o.GetKind()+" "+o.GetName())
		}
	}
	slices.Sort(hooks)
	if diff := cmp.Diff([]string{"ClusterRoleBinding schedscope:test", "Pod schedscope-test", "Role schedscope:test", "RoleBinding schedscope:test", "ServiceAccount schedscope-test"}, hooks); diff != "" {
		t.Errorf("test hooks (-want +got):\n%s", diff)
	}

	pod := find(t, objs, "Pod", "schedscope-test")
	var sidecarImage any
	for _, c := range slice(find(t, objs, "Deployment", "schedscope").Object, "spec", "template", "spec", "containers") {
		if c := c.(map[string]any); c["name"] == "sidecar" {
			sidecarImage = c["image"]
		}
	}
	var commands [][]any
	for _, c := range slice(pod.Object, "spec", "containers") {
		c := c.(map[string]any)
		commands = append(commands, append(slices.Clone(c["command"].([]any)), c["args"].([]any)...))
		if c["image"] != sidecarImage {
			t.Errorf("container %s: image %v, want the sidecar's %v", c["name"], c["image"], sidecarImage)
		}
	}
	if diff := cmp.Diff([][]any{{"/kubectl-schedscope", "status"}, {"/kubectl-schedscope", "pending", "--namespace", "schedscope"}}, commands); diff != "" {
		t.Errorf("containers' commands (-want +got):\n%s", diff)
	}
	if got, _, _ := unstructured.NestedString(pod.Object, "spec", "serviceAccountName"); got != "schedscope-test" {
		t.Errorf("serviceAccountName %q, want schedscope-test", got)
	}
	selector, _, _ := unstructured.NestedStringMap(find(t, objs, "Service", "schedscope-sidecar").Object, "spec", "selector")
	selected := true
	for k, v := range selector {
		selected = selected && pod.GetLabels()[k] == v
	}
	if selected {
		t.Errorf("the sidecar's Service (selector %v) selects the test pod (labels %v)", selector, pod.GetLabels())
	}

	binding := find(t, objs, "ClusterRoleBinding", "schedscope:test")
	if got, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name"); got != "schedscope:metrics-reader" {
		t.Errorf("the test's account is bound to %s, want schedscope:metrics-reader", got)
	}
	if diff := cmp.Diff([]any{map[string]any{"kind": "ServiceAccount", "name": "schedscope-test", "namespace": "schedscope"}}, slice(binding.Object, "subjects")); diff != "" {
		t.Errorf("binding's subjects (-want +got):\n%s", diff)
	}
	readsStatus := false
	for _, r := range slice(find(t, objs, "ClusterRole", "schedscope:metrics-reader").Object, "rules") {
		r := r.(map[string]any)
		readsStatus = readsStatus || (slices.Contains(slice(r, "apiGroups"), any("schedscope.io")) &&
			slices.Contains(slice(r, "resources"), any("status")) && slices.Contains(slice(r, "verbs"), any("get")))
	}
	if !readsStatus {
		t.Error("schedscope:metrics-reader does not grant get on status in schedscope.io")
	}

	namespaced := find(t, objs, "RoleBinding", "schedscope:test")
	if got, _, _ := unstructured.NestedStringMap(namespaced.Object, "roleRef"); got["kind"] != "Role" || got["name"] != "schedscope:test" {
		t.Errorf("the test's namespaced binding refers to %v, want Role schedscope:test", got)
	}
	if diff := cmp.Diff([]any{map[string]any{"kind": "ServiceAccount", "name": "schedscope-test", "namespace": "schedscope"}}, slice(namespaced.Object, "subjects")); diff != "" {
		t.Errorf("namespaced binding's subjects (-want +got):\n%s", diff)
	}
	role := find(t, objs, "Role", "schedscope:test")
	if role.GetNamespace() != "schedscope" {
		t.Errorf("Role schedscope:test in namespace %q, want the release's schedscope", role.GetNamespace())
	}
	wantRules := []any{
		map[string]any{"apiGroups": []any{"schedscope.io"}, "resources": []any{"pending"}, "verbs": []any{"list"}},
		map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"list"}},
	}
	if diff := cmp.Diff(wantRules, slice(role.Object, "rules")); diff != "" {
		t.Errorf("Role schedscope:test's rules (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		set  []string
		want string
	}{
		{[]string{"test.image.repository=kubectl.example.com/schedscope", "test.image.tag=v9"}, "kubectl.example.com/schedscope:v9"},
		{[]string{"sidecar.image.repository=mirror.example.com/sidecar", "image.tag=v2"}, "mirror.example.com/sidecar:v2"},
	} {
		for _, c := range slice(find(t, render(t, "schedscope", tt.set...), "Pod", "schedscope-test").Object, "spec", "containers") {
			if image := c.(map[string]any)["image"]; image != tt.want {
				t.Errorf("%v: container %v: image %v, want %s", tt.set, c.(map[string]any)["name"], image, tt.want)
			}
		}
	}
	for _, o := range render(t, "schedscope", "apiService.enabled=false", "apiService.certificate.source=certManager") {
		if o.GetAnnotations()["helm.sh/hook"] == "test" {
			t.Errorf("without the APIService: test hook %s %s", o.GetKind(), o.GetName())
		}
	}
}

// Package manifests renders the Helm chart (charts/schedscope) with
// `helm template` over several values sets, applies each rendering to a
// real kube-apiserver with server-side apply and strict field validation,
// reads every object back, and checks that the RBAC it grants is what the
// scheduler and the sidecar need; and installs, upgrades and uninstalls it
// with helm.
package manifests

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	k8scorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	saadmission "k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"sigs.k8s.io/yaml"

	schedulerapp "github.com/schedscope/schedscope/cmd/schedscope-scheduler/app"
	sidecarapp "github.com/schedscope/schedscope/cmd/schedscope-sidecar/app"
	"github.com/schedscope/schedscope/test/framework"
)

var (
	controlPlane *framework.ControlPlane
	applier      *framework.Applier
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "schedscope-manifests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	controlPlane, err = framework.StartControlPlane(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer controlPlane.Stop()
	if applier, err = controlPlane.NewApplier("schedscope-manifests-test"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "logs kept in %s\n", dir)
	}
	return code
}

// repoFile reads a file of the repository.
func repoFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// release is one values set of the chart (charts/schedscope/ci) installed
// in a namespace, and what its rendering must hold.
type release struct {
	values    string
	namespace string
	// lease is the scheduler's leader election Lease.
	lease string
	// profiles are the scheduler configuration's profiles.
	profiles []string
	tracing  bool
	// monitoring: ServiceMonitor, PrometheusRule and dashboard.
	monitoring bool
	// apiService: the APIService and how its CA is set.
	apiService string
	// api: the explain API served by Deployment schedscope-api from the
	// PostgreSQL store, and the APIService pointing at its Service.
	api bool
}

var releases = []release{
	{values: "default", namespace: "schedscope", lease: "schedscope-scheduler", profiles: []string{"schedscope", "schedscope-binpack"}, apiService: "caBundle"},
	{values: "tracing", namespace: "schedscope", lease: "schedscope-scheduler", profiles: []string{"schedscope", "schedscope-binpack"}, tracing: true, apiService: "caBundle"},
	{values: "monitoring", namespace: "schedscope", lease: "schedscope-scheduler", profiles: []string{"schedscope", "schedscope-binpack"}, monitoring: true, apiService: "caBundle"},
	{values: "ha", namespace: "scheduling", lease: "schedscope-ha", profiles: []string{"batch"}, tracing: true, apiService: "cert-manager"},
	{values: "secret", namespace: "ops", lease: "schedscope-scheduler", profiles: []string{"schedscope", "schedscope-binpack"}},
	{values: "postgres", namespace: "west", lease: "schedscope-scheduler", profiles: []string{"schedscope", "schedscope-binpack"}, apiService: "caBundle", api: true},
}

func (r release) valuesFile() string {
	return filepath.Join(framework.ChartDir(), "ci", r.values+"-values.yaml")
}

// render renders the chart for r.
func render(t *testing.T, r release) []*unstructured.Unstructured {
	t.Helper()
	out, err := framework.RenderChart(r.namespace, []string{r.valuesFile()})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.DecodeYAML(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatal("no objects")
	}
	return objs
}

// TestLint runs `helm lint --strict` with each values set.
func TestLint(t *testing.T) {
	helm, err := framework.Binary("helm")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range releases {
		out, err := exec.Command(helm, "lint", "--strict", framework.ChartDir(), "--namespace", r.namespace, "--values", r.valuesFile()).CombinedOutput()
		if err != nil {
			t.Errorf("helm lint with %s values: %v\n%s", r.values, err, out)
		}
	}
}

// TestDefaultsInStep keeps the examples in config/ equal to what the
// chart's default values render: the scheduler configuration and the
// sidecar's flags.
func TestDefaultsInStep(t *testing.T) {
	objs := render(t, releases[0])
	var example, rendered any
	if err := yaml.Unmarshal(repoFile(t, "config/scheduler-two-profiles.yaml"), &example); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "schedscope-scheduler-config" {
			data, _, _ := unstructured.NestedString(o.Object, "data", "scheduler-config.yaml")
			if err := yaml.Unmarshal([]byte(data), &rendered); err != nil {
				t.Fatal(err)
			}
		}
	}
	if diff := cmp.Diff(example, rendered); diff != "" {
		t.Errorf("scheduler.config of values.yaml and config/scheduler-two-profiles.yaml differ (-config/ +chart):\n%s", diff)
	}

	var want []string
	for _, line := range strings.Split(string(repoFile(t, "config/sidecar.args")), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			want = append(want, line)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			if diff := cmp.Diff(want, containerArgs(t, o, "sidecar")); diff != "" {
				t.Errorf("sidecar args of the Deployment and config/sidecar.args differ (-sidecar.args +Deployment):\n%s", diff)
			}
		}
	}
}

func containerArgs(t *testing.T, deploy *unstructured.Unstructured, name string) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		c := c.(map[string]any)
		if c["name"] == name {
			args, _, _ := unstructured.NestedStringSlice(c, "args")
			return args
		}
	}
	t.Fatalf("Deployment %s has no container %s", deploy.GetName(), name)
	return nil
}

// applyCRDs applies the CRDs of testdata/ that the chart's optional
// objects need (Prometheus Operator's, cert-manager's) and waits until
// they are established.
func applyCRDs(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(framework.RepoRoot(), "test/integration/manifests/testdata/*-crd.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in testdata: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crds, err := framework.DecodeYAML(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, crd := range crds {
			apply(t, crd)
			waitEstablished(t, crd.GetName())
		}
	}
}

func waitEstablished(t *testing.T, name string) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: gvr.Group, Version: gvr.Version, Kind: "CustomResourceDefinition"})
	crd.SetName(name)
	r, err := applier.Resource(context.Background(), crd)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := r.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Established" && c["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not established: %v", name, err)
	}
}

// apply applies obj with server-side apply and strict field validation and
// returns the object as stored.
func apply(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := applier.Apply(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// contained reports where want is not contained in got: every field of
// want must be in got with the same value (got may have more: defaults).
func contained(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %v", path, got)}
		}
		var diffs []string
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing (pruned or dropped by the server)", path, k))
				continue
			}
			diffs = append(diffs, contained(path+"."+k, wv, gv)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, contained(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return diffs
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %v (%T), got %v (%T)", path, want, want, got, got)}
		}
		return nil
	}
}

// TestApply applies the rendering of each values set in turn, in its
// namespace (like installs and upgrades), reads every object back, and
// checks the objects and the RBAC they grant.
func TestApply(t *testing.T) {
	applyCRDs(t)
	for _, r := range releases {
		t.Run(r.values, func(t *testing.T) {
			objs := render(t, r)
			ns := &unstructured.Unstructured{}
			ns.SetAPIVersion("v1")
			ns.SetKind("Namespace")
			ns.SetName(r.namespace)
			apply(t, ns)
			// Every namespaced object names its namespace (the applier
			// refuses one that does not): kubectl apply -n is not needed.
			for _, obj := range objs {
				apply(t, obj)
			}
			var summary []string
			for _, obj := range objs {
				summary = append(summary, obj.GetKind()+" "+strings.TrimPrefix(obj.GetNamespace()+"/"+obj.GetName(), "/"))
				r, err := applier.Resource(context.Background(), obj)
				if err != nil {
					t.Fatal(err)
				}
				got, err := r.Get(context.Background(), obj.GetName(), metav1.GetOptions{})
				if err != nil {
					t.Errorf("reading back %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
					continue
				}
				id := fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
				for _, d := range contained(id, obj.Object, got.Object) {
					t.Error(d)
				}
			}
			checkObjects(t, r, objs)
			checkRBAC(t, r)
			t.Logf("helm template -n %s -f ci/%s-values.yaml: applied %d objects:\n  %s", r.namespace, r.values, len(objs), strings.Join(summary, "\n  "))
		})
	}
}

// checkObjects checks what each rendering must hold.
func checkObjects(t *testing.T, r release, objs []*unstructured.Unstructured) {
	t.Helper()
	byKind := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
	}
	var deploy *unstructured.Unstructured
	for _, d := range byKind["Deployment"] {
		if d.GetName() == "schedscope" {
			deploy = d
		}
	}
	if deploy == nil {
		t.Fatal("no Deployment schedscope")
	}
	sched := containerArgs(t, deploy, "scheduler")
	for _, want := range []string{"--leader-elect=true", "--leader-elect-resource-name=" + r.lease, "--leader-elect-resource-namespace=" + r.namespace, "--config=/etc/schedscope/scheduler-config.yaml"} {
		if !slices.Contains(sched, want) {
			t.Errorf("scheduler args %q lack %s", sched, want)
		}
	}
	// The binaries accept every flag the chart passes.
	schedCmd := schedulerapp.NewSchedulerCommand()
	if err := schedCmd.Flags().Parse(sched); err != nil {
		t.Errorf("schedscope-scheduler rejects the Deployment's args: %v", err)
	}
	sidecarFlags := pflag.NewFlagSet("schedscope-sidecar", pflag.ContinueOnError)
	sidecarapp.NewOptions().AddFlags(sidecarFlags)
	if err := sidecarFlags.Parse(containerArgs(t, deploy, "sidecar")); err != nil {
		t.Errorf("schedscope-sidecar rejects the Deployment's args: %v", err)
	}

	hasTracing := slices.ContainsFunc(sched, func(a string) bool { return strings.HasPrefix(a, "--tracing-config-file=") })
	if hasTracing != r.tracing {
		t.Errorf("scheduler traces: %v, want %v", hasTracing, r.tracing)
	}

	spec, _, _ := unstructured.NestedMap(deploy.Object, "spec", "template", "spec")
	if v, _, _ := unstructured.NestedBool(spec, "securityContext", "runAsNonRoot"); !v {
		t.Error("the pod does not run as non-root")
	}
	probes := map[string]int64{"scheduler": 10259, "sidecar": 10263}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	for _, c := range containers {
		c := c.(map[string]any)
		name := c["name"].(string)
		if v, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !v {
			t.Errorf("container %s: root filesystem not read-only", name)
		}
		if _, ok, _ := unstructured.NestedMap(c, "resources", "requests"); !ok {
			t.Errorf("container %s: no resource requests", name)
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			port, _, _ := unstructured.NestedInt64(c, probe, "httpGet", "port")
			scheme, _, _ := unstructured.NestedString(c, probe, "httpGet", "scheme")
			if port != probes[name] || scheme != "HTTPS" {
				t.Errorf("container %s: %s on %s port %d, want HTTPS %d", name, probe, scheme, port, probes[name])
			}
		}
		delete(probes, name)
	}
	if len(probes) > 0 {
		t.Errorf("containers missing: %v", probes)
	}

	// The scheduler configuration in the ConfigMap loads as kube-scheduler loads it.
	for _, cm := range byKind["ConfigMap"] {
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		if cfg, ok := data["scheduler-config.yaml"]; ok {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := options.LoadConfigFromFile(klog.Background(), path)
			if err != nil {
				t.Errorf("ConfigMap %s: %v", cm.GetName(), err)
				continue
			}
			var profiles []string
			for _, p := range c.Profiles {
				profiles = append(profiles, p.SchedulerName)
			}
			if diff := cmp.Diff(r.profiles, profiles); diff != "" {
				t.Errorf("ConfigMap %s: profiles (-want +got):\n%s", cm.GetName(), diff)
			}
		}
	}

	// Every role a binding refers to exists: in the cluster (the upstream
	// roles) or in the manifests.
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, b := range byKind[kind] {
			roleKind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
			roleName, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
			var err error
			if roleKind == "ClusterRole" {
				_, err = controlPlane.Client.RbacV1().ClusterRoles().Get(context.Background(), roleName, metav1.GetOptions{})
			} else {
				_, err = controlPlane.Client.RbacV1().Roles(b.GetNamespace()).Get(context.Background(), roleName, metav1.GetOptions{})
			}
			if err != nil {
				t.Errorf("%s %s refers to %s %s: %v", kind, b.GetName(), roleKind, roleName, err)
			}
		}
	}

	// The sidecar's account, and the API replicas', hold the sidecar's
	// roles and nothing else.
	accounts := []string{"schedscope-sidecar"}
	if r.api {
		accounts = append(accounts, "schedscope-api")
	}
	for _, sa := range accounts {
		want := []string{"ClusterRole schedscope:sidecar", "Role extension-apiserver-authentication-reader"}
		if diff := cmp.Diff(want, boundRoles(byKind, r.namespace, sa)); diff != "" {
			t.Errorf("the roles bound to %s/%s (-want +got):\n%s", r.namespace, sa, diff)
		}
	}

	checkTokens(t, deploy, byKind)

	checkAPIService(t, r, byKind)
	checkNetworkPolicy(t, r, byKind)
	checkPlacement(t, r, deploy, byKind)
	checkAPI(t, r, byKind)
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		if n, want := len(byKind[kind]), map[bool]int{true: 1}[r.monitoring]; n != want {
			t.Errorf("%d %ss, want %d", n, kind, want)
		}
	}
	if r.monitoring {
		checkMonitoring(t, r, byKind)
	}
}

// checkNetworkPolicy checks that one NetworkPolicy selects the scheduler's
// pod and the API's, that it restricts their ingress to the explain API's
// port and the /metrics ports, and that the API's Service (the sidecar's)
// does not reach the scheduler's port.
func checkNetworkPolicy(t *testing.T, r release, byKind map[string][]*unstructured.Unstructured) {
	t.Helper()
	if len(byKind["NetworkPolicy"]) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(byKind["NetworkPolicy"]))
	}
	var np networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byKind["NetworkPolicy"][0].Object, &np); err != nil {
		t.Fatal(err)
	}
	selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range byKind["Deployment"] {
		l, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		if !selector.Matches(labels.Set(l)) {
			t.Errorf("the NetworkPolicy (%s) does not select the pods of Deployment %s", selector, d.GetName())
		}
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("the NetworkPolicy's policyTypes %v, want [Ingress]", np.Spec.PolicyTypes)
	}
	var ports []int32
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Errorf("an ingress rule admits every port: %v", rule)
		}
		for _, p := range rule.Ports {
			ports = append(ports, p.Port.IntVal)
		}
	}
	slices.Sort(ports)
	if want := []int32{10259, 10263, 10263}; !slices.Equal(ports, want) {
		t.Errorf("the NetworkPolicy admits ports %v, want %v", ports, want)
	}
	for _, svc := range byKind["Service"] {
		if svc.GetName() != "schedscope-sidecar" && svc.GetName() != "schedscope-api" {
			continue
		}
		svcPorts, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		for _, p := range svcPorts {
			if p := p.(map[string]any); p["targetPort"] != "https" {
				t.Errorf("Service %s/%s (the explain API's) reaches port %v", r.namespace, svc.GetName(), p["targetPort"])
			}
		}
	}
}

// boundRoles returns the roles the bindings grant the service account
// namespace/name, as "KIND NAME", sorted.
func boundRoles(byKind map[string][]*unstructured.Unstructured, namespace, name string) []string {
	var roles []string
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, b := range byKind[kind] {
			roleKind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
			roleName, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
			subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
			for _, s := range subjects {
				s := s.(map[string]any)
				if s["kind"] == "ServiceAccount" && s["name"] == name && s["namespace"] == namespace {
					roles = append(roles, roleKind+" "+roleName)
				}
			}
		}
	}
	slices.Sort(roles)
	return roles
}

// checkPlacement checks that the pod carries the placement, priority,
// resources and database volume the values set asks for.
func checkPlacement(t *testing.T, r release, deploy *unstructured.Unstructured, byKind map[string][]*unstructured.Unstructured) {
	t.Helper()
	var values struct {
		PriorityClassName string            `json:"priorityClassName"`
		NodeSelector      map[string]string `json:"nodeSelector"`
		Tolerations       []any             `json:"tolerations"`
		Sidecar           struct {
			Resources   map[string]any `json:"resources"`
			Persistence struct {
				Enabled bool `json:"enabled"`
			} `json:"persistence"`
		} `json:"sidecar"`
	}
	if err := yaml.Unmarshal(repoFile(t, filepath.Join("charts/schedscope/ci", r.values+"-values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(deploy.Object, "spec", "template", "spec")
	var got struct {
		PriorityClassName string            `json:"priorityClassName"`
		NodeSelector      map[string]string `json:"nodeSelector"`
		Tolerations       []any             `json:"tolerations"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &got); err != nil {
		t.Fatal(err)
	}
	if got.PriorityClassName != values.PriorityClassName || !reflect.DeepEqual(got.NodeSelector, values.NodeSelector) || len(got.Tolerations) != len(values.Tolerations) {
		t.Errorf("pod priorityClassName %q, nodeSelector %v, tolerations %v; the values ask for %q, %v, %v",
			got.PriorityClassName, got.NodeSelector, got.Tolerations, values.PriorityClassName, values.NodeSelector, values.Tolerations)
	}
	if values.Sidecar.Resources != nil {
		containers, _, _ := unstructured.NestedSlice(spec, "containers")
		for _, c := range containers {
			c := c.(map[string]any)
			if c["name"] == "sidecar" && !reflect.DeepEqual(c["resources"], values.Sidecar.Resources) {
				t.Errorf("sidecar resources %v, the values ask for %v", c["resources"], values.Sidecar.Resources)
			}
		}
	}
	if r.api {
		// PostgreSQL: no database volume, no claim.
		volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
		if slices.ContainsFunc(volumes, func(v any) bool { return v.(map[string]any)["name"] == "data" }) || len(byKind["PersistentVolumeClaim"]) != 0 {
			t.Errorf("with the PostgreSQL store the pod has a data volume or the chart a PersistentVolumeClaim (%d)", len(byKind["PersistentVolumeClaim"]))
		}
		return
	}
	claim, _, _ := unstructured.NestedString(volume(t, spec, "data"), "persistentVolumeClaim", "claimName")
	if values.Sidecar.Persistence.Enabled {
		if claim != "schedscope-data" || len(byKind["PersistentVolumeClaim"]) != 1 {
			t.Errorf("the database's volume claims %q with %d PersistentVolumeClaims; want schedscope-data, the chart's", claim, len(byKind["PersistentVolumeClaim"]))
		}
	} else if claim != "" {
		t.Errorf("the database's volume claims %q, want an emptyDir", claim)
	}
}

// volume returns the pod spec's volume name.
func volume(t *testing.T, spec map[string]any, name string) map[string]any {
	t.Helper()
	volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, v := range volumes {
		if v := v.(map[string]any); v["name"] == name {
			return v
		}
	}
	t.Fatalf("the pod has no volume %s", name)
	return nil
}

// checkAPIService checks how the kube-apiserver verifies the sidecar: with
// a caBundle that verifies the certificate the sidecar serves (for the
// Service's name), or with the CA cert-manager injects from the sidecar's
// Certificate; never with insecureSkipTLSVerify.
func checkAPIService(t *testing.T, r release, byKind map[string][]*unstructured.Unstructured) {
	t.Helper()
	service := "schedscope-sidecar"
	if r.api {
		service = "schedscope-api"
	}
	host := service + "." + r.namespace + ".svc"
	if r.apiService == "" {
		if n := len(byKind["APIService"]); n != 0 {
			t.Errorf("%d APIServices, want none", n)
		}
		return
	}
	if len(byKind["APIService"]) != 1 {
		t.Fatalf("%d APIServices, want 1", len(byKind["APIService"]))
	}
	svc := byKind["APIService"][0]
	if insecure, _, _ := unstructured.NestedBool(svc.Object, "spec", "insecureSkipTLSVerify"); insecure {
		t.Error("the APIService skips TLS verification")
	}
	if ns, _, _ := unstructured.NestedString(svc.Object, "spec", "service", "namespace"); ns != r.namespace {
		t.Errorf("the APIService points at namespace %q, want %q", ns, r.namespace)
	}
	if name, _, _ := unstructured.NestedString(svc.Object, "spec", "service", "name"); name != service {
		t.Errorf("the APIService points at Service %q, want %s", name, service)
	}
	switch r.apiService {
	case "caBundle":
		caBundle, _, _ := unstructured.NestedString(svc.Object, "spec", "caBundle")
		var secret *unstructured.Unstructured
		for _, s := range byKind["Secret"] {
			if s.GetName() == "schedscope-sidecar-tls" {
				secret = s
			}
		}
		if secret == nil {
			t.Fatal("no Secret schedscope-sidecar-tls")
		}
		crt, _, _ := unstructured.NestedString(secret.Object, "data", "tls.crt")
		key, _, _ := unstructured.NestedString(secret.Object, "data", "tls.key")
		// The scheduler serves the same certificate on its metrics port.
		for _, h := range []string{host, "schedscope-scheduler-metrics." + r.namespace + ".svc"} {
			if err := verifyServing(caBundle, crt, key, h); err != nil {
				t.Errorf("the APIService's caBundle and Secret schedscope-sidecar-tls, for %s: %v", h, err)
			}
		}
	case "cert-manager":
		if got, want := svc.GetAnnotations()["cert-manager.io/inject-ca-from"], r.namespace+"/schedscope-sidecar"; got != want {
			t.Errorf("APIService annotation cert-manager.io/inject-ca-from is %q, want %q", got, want)
		}
		if len(byKind["Certificate"]) != 1 {
			t.Fatalf("%d Certificates, want 1", len(byKind["Certificate"]))
		}
		cert := byKind["Certificate"][0]
		secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		scheduler := "schedscope-scheduler-metrics." + r.namespace + ".svc"
		if secretName != "schedscope-sidecar-tls" || !slices.Contains(dnsNames, host) || !slices.Contains(dnsNames, scheduler) {
			t.Errorf("Certificate %s: secretName %q, dnsNames %q; want schedscope-sidecar-tls, %s and %s", cert.GetName(), secretName, dnsNames, host, scheduler)
		}
	}
}

// verifyServing checks that the base64 PEM certificate crt, with its key,
// is valid for host under the base64 PEM CA caBundle.
func verifyServing(caBundle, crt, key, host string) error {
	var pem [3][]byte
	for i, b64 := range []string{caBundle, crt, key} {
		var err error
		if pem[i], err = base64.StdEncoding.DecodeString(b64); err != nil {
			return err
		}
	}
	pair, err := tls.X509KeyPair(pem[1], pem[2])
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem[0]) {
		return errors.New("caBundle holds no certificate")
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots})
	return err
}

// checkMonitoring checks that the ServiceMonitor scrapes the scheduler and
// the sidecar as the jobs the alert rules name, verifying the certificate
// both serve with the CA of its Secret for each Service's name, and that
// the PrometheusRule holds the groups of the rule file promtool tests.
func checkMonitoring(t *testing.T, r release, byKind map[string][]*unstructured.Unstructured) {
	t.Helper()
	rules := string(repoFile(t, "charts/schedscope/files/schedscope.rules.yaml"))
	wantJobs := map[string]string{"scheduler": "schedscope-scheduler", "https": "schedscope-sidecar"}
	for _, sm := range byKind["ServiceMonitor"] {
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		gotJobs := map[string]string{}
		for _, ep := range endpoints {
			ep := ep.(map[string]any)
			service := map[any]string{"https": "schedscope-sidecar", "scheduler": "schedscope-scheduler-metrics"}[ep["port"]]
			want := map[string]any{
				"ca":         map[string]any{"secret": map[string]any{"name": "schedscope-sidecar-tls", "key": "ca.crt"}},
				"serverName": service + "." + r.namespace + ".svc",
			}
			if diff := cmp.Diff(want, ep["tlsConfig"]); diff != "" {
				t.Errorf("ServiceMonitor %s: the %v endpoint's tlsConfig (-want +got):\n%s", sm.GetName(), ep["port"], diff)
			}
			relabelings, _, _ := unstructured.NestedSlice(ep, "relabelings")
			for _, r := range relabelings {
				r := r.(map[string]any)
				if r["targetLabel"] == "job" {
					gotJobs[fmt.Sprint(ep["port"])] = fmt.Sprint(r["replacement"])
				}
			}
		}
		if diff := cmp.Diff(wantJobs, gotJobs); diff != "" {
			t.Errorf("ServiceMonitor %s: job of each port (-want +got):\n%s", sm.GetName(), diff)
		}
	}
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		for _, o := range byKind[kind] {
			if got := o.GetLabels()["release"]; got != "kube-prometheus-stack" {
				t.Errorf("%s %s: label release=%q, want the values' kube-prometheus-stack", kind, o.GetName(), got)
			}
		}
	}
	dashboard := repoFile(t, "charts/schedscope/files/schedscope-dashboard.json")
	if !slices.ContainsFunc(byKind["ConfigMap"], func(cm *unstructured.Unstructured) bool {
		data, _, _ := unstructured.NestedString(cm.Object, "data", "schedscope-dashboard.json")
		return cm.GetLabels()["grafana_dashboard"] == "1" && strings.TrimSpace(data) == strings.TrimSpace(string(dashboard))
	}) {
		t.Error("no ConfigMap labelled grafana_dashboard=1 holds charts/schedscope/files/schedscope-dashboard.json")
	}
	for _, job := range wantJobs {
		if !strings.Contains(rules, `job="`+job+`"`) {
			t.Errorf("the alert rules do not name job %s", job)
		}
	}

	var file struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal([]byte(rules), &file); err != nil {
		t.Fatal(err)
	}
	if len(byKind["PrometheusRule"]) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(byKind["PrometheusRule"]))
	}
	groups, _, _ := unstructured.NestedSlice(byKind["PrometheusRule"][0].Object, "spec", "groups")
	if diff := cmp.Diff(file.Groups, groups); diff != "" {
		t.Errorf("the PrometheusRule's groups differ from charts/schedscope/files/schedscope.rules.yaml (-rules file +PrometheusRule):\n%s", diff)
	}
}

// tokenPath is where in-cluster clients (client-go's rest.InClusterConfig)
// read a service account's token, CA and namespace.
const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// checkTokens checks that each container of the pod authenticates as its
// own service account: the pod automounts nothing; the scheduler alone
// mounts a token of the pod's service account, projected as the kubelet
// mounts it for a pod that automounts; the sidecar mounts the token Secret
// of schedscope-sidecar and nothing of the scheduler's token.
func checkTokens(t *testing.T, deploy *unstructured.Unstructured, byKind map[string][]*unstructured.Unstructured) {
	t.Helper()
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deploy.Object, &d); err != nil {
		t.Fatalf("Deployment %s: %v", deploy.GetName(), err)
	}
	spec := d.Spec.Template.Spec
	if spec.ServiceAccountName != "schedscope" {
		t.Errorf("the pod's service account is %q, want schedscope", spec.ServiceAccountName)
	}
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("the pod automounts its service account's token into every container; want automountServiceAccountToken: false")
	}

	if !slices.ContainsFunc(byKind["ServiceAccount"], func(sa *unstructured.Unstructured) bool {
		return sa.GetNamespace() == d.Namespace && sa.GetName() == "schedscope-sidecar"
	}) {
		t.Errorf("no ServiceAccount %s/schedscope-sidecar", d.Namespace)
	}
	// The token Secrets in the pod's namespace, and whose tokens they hold.
	tokenSecrets := map[string]string{}
	for _, s := range byKind["Secret"] {
		if typ, _, _ := unstructured.NestedString(s.Object, "type"); typ == string(corev1.SecretTypeServiceAccountToken) && s.GetNamespace() == d.Namespace {
			tokenSecrets[s.GetName()] = s.GetAnnotations()[corev1.ServiceAccountNameKey]
		}
	}
	if sa := tokenSecrets["schedscope-sidecar-token"]; sa != "schedscope-sidecar" {
		t.Errorf("Secret %s/schedscope-sidecar-token holds a token of %q, want a %s of schedscope-sidecar", d.Namespace, sa, corev1.SecretTypeServiceAccountToken)
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	// credentials says whose token a volume holds, and how: projected (of
	// the pod's service account) or from a token Secret.
	credentials := func(v corev1.Volume) string {
		switch {
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				if p.ServiceAccountToken != nil {
					return "projected token of " + spec.ServiceAccountName
				}
			}
		case v.Secret != nil:
			if sa, ok := tokenSecrets[v.Secret.SecretName]; ok {
				return fmt.Sprintf("token of %s from Secret %s", sa, v.Secret.SecretName)
			}
		}
		return ""
	}
	want := map[string]string{
		"scheduler": "projected token of schedscope at " + tokenPath,
		"sidecar":   "token of schedscope-sidecar from Secret schedscope-sidecar-token at " + tokenPath,
	}
	tokenVolume := map[string]string{}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		var got, wantMounts []string
		if w, ok := want[c.Name]; ok {
			wantMounts = []string{w}
		}
		for _, m := range c.VolumeMounts {
			v, ok := volumes[m.Name]
			if !ok {
				t.Errorf("container %s mounts volume %s, which the pod does not have", c.Name, m.Name)
				continue
			}
			if cred := credentials(v); cred != "" {
				got = append(got, cred+" at "+m.MountPath)
			}
			if m.MountPath == tokenPath {
				tokenVolume[c.Name] = m.Name
				if !m.ReadOnly || m.SubPath != "" || m.SubPathExpr != "" {
					t.Errorf("container %s: %s is not a read-only mount of the whole volume %s", c.Name, tokenPath, m.Name)
				}
			}
		}
		if diff := cmp.Diff(wantMounts, got); diff != "" {
			t.Errorf("container %s mounts these service account tokens (-want +got):\n%s", c.Name, diff)
		}
	}

	// The sidecar's Secret volume has all that rest.InClusterConfig reads.
	if v := volumes[tokenVolume["sidecar"]]; v.Secret != nil && len(v.Secret.Items) > 0 {
		paths := map[string]string{}
		for _, item := range v.Secret.Items {
			paths[item.Key] = item.Path
		}
		for _, key := range []string{"token", "ca.crt", "namespace"} {
			if paths[key] != key {
				t.Errorf("volume %s puts key %s of Secret %s at %q, want %q", v.Name, key, v.Secret.SecretName, paths[key], key)
			}
		}
	}

	// The scheduler's volume is the one the ServiceAccount admission plugin
	// adds to a pod that automounts, for the kubelet to mount: compared as
	// the apiserver stores both, with defaults.
	var automounted corev1.ProjectedVolumeSource
	if err := k8scorev1.Convert_core_ProjectedVolumeSource_To_v1_ProjectedVolumeSource(saadmission.TokenVolumeSource(), &automounted, nil); err != nil {
		t.Fatal(err)
	}
	stored, err := controlPlane.Client.AppsV1().Deployments(d.Namespace).Get(context.Background(), d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(stored.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == tokenVolume["scheduler"] })
	if i < 0 || stored.Spec.Template.Spec.Volumes[i].Projected == nil {
		t.Errorf("the scheduler's volume at %s is not a projected volume", tokenPath)
	} else if diff := cmp.Diff(&automounted, stored.Spec.Template.Spec.Volumes[i].Projected); diff != "" {
		t.Errorf("the scheduler's token volume differs from the one the kubelet mounts for a pod that automounts (-automounted +scheduler):\n%s", diff)
	}
}

// checkRBAC asks the apiserver what each container's service account may
// do: the pod's (the scheduler's) what kube-scheduler does; the sidecar's
// what the sidecar does, and none of the scheduler's rights.
func checkRBAC(t *testing.T, r release) {
	var (
		scheduler = "system:serviceaccount:" + r.namespace + ":schedscope"
		sidecar   = "system:serviceaccount:" + r.namespace + ":schedscope-sidecar"
	)
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + r.namespace, "system:authenticated"}
	tests := []struct {
		who   string
		user  string
		allow bool
		authorizationv1.ResourceAttributes
	}{
		{"scheduler: leader election", scheduler, true, authorizationv1.ResourceAttributes{Namespace: r.namespace, Verb: "create", Group: "coordination.k8s.io", Resource: "leases"}},
		{"scheduler: leader election", scheduler, true, authorizationv1.ResourceAttributes{Namespace: r.namespace, Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Name: r.lease}},
		{"scheduler: leader election", scheduler, true, authorizationv1.ResourceAttributes{Namespace: r.namespace, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: r.lease}},
		{"scheduler: only its own lease", scheduler, false, authorizationv1.ResourceAttributes{Namespace: r.namespace, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "other-scheduler"}},
		{"scheduler: binding", scheduler, true, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "create", Resource: "pods", Subresource: "binding"}},
		{"scheduler: binding", scheduler, true, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "create", Resource: "bindings"}},
		{"scheduler: status", scheduler, true, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "patch", Resource: "pods", Subresource: "status"}},
		{"scheduler: preemption", scheduler, true, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "delete", Resource: "pods"}},
		{"scheduler: nodes", scheduler, true, authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}},
		{"scheduler: namespaces", scheduler, true, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "namespaces"}},
		{"scheduler: volume binding", scheduler, true, authorizationv1.ResourceAttributes{Verb: "list", Resource: "persistentvolumes"}},
		{"scheduler: volume binding", scheduler, true, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "update", Resource: "persistentvolumeclaims"}},
		{"scheduler: storage classes", scheduler, true, authorizationv1.ResourceAttributes{Verb: "watch", Group: "storage.k8s.io", Resource: "storageclasses"}},
		{"scheduler: delegated authentication", scheduler, true, authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "configmaps", Name: "extension-apiserver-authentication"}},
		{"scheduler: delegated authentication", scheduler, true, authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"}},
		{"scheduler: delegated authorization", scheduler, true, authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}},

		{"sidecar: pods", sidecar, true, authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}},
		{"sidecar: pods", sidecar, true, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "pods"}},
		{"sidecar: events", sidecar, true, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "events"}},
		{"sidecar: events", sidecar, true, authorizationv1.ResourceAttributes{Verb: "list", Group: "events.k8s.io", Resource: "events"}},
		{"sidecar: namespaces", sidecar, true, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "namespaces"}},
		{"sidecar: nodes", sidecar, true, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "nodes"}},
		{"sidecar: namespaces", sidecar, true, authorizationv1.ResourceAttributes{Verb: "get", Resource: "namespaces", Name: "any"}},
		{"sidecar: delegated authentication", sidecar, true, authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "configmaps", Name: "extension-apiserver-authentication"}},
		{"sidecar: delegated authentication", sidecar, true, authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"}},
		{"sidecar: delegated authorization", sidecar, true, authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}},
		// None of the scheduler's rights.
		{"sidecar: no preemption", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "delete", Resource: "pods"}},
		{"sidecar: no binding", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "create", Resource: "pods", Subresource: "binding"}},
		{"sidecar: no binding", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "create", Resource: "bindings"}},
		{"sidecar: no pod status", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "patch", Resource: "pods", Subresource: "status"}},
		{"sidecar: no leader election", sidecar, false, authorizationv1.ResourceAttributes{Namespace: r.namespace, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: r.lease}},
		{"sidecar: no scheduler's token", sidecar, false, authorizationv1.ResourceAttributes{Namespace: r.namespace, Verb: "create", Resource: "serviceaccounts", Subresource: "token", Name: "schedscope"}},
		{"sidecar: no secrets", sidecar, false, authorizationv1.ResourceAttributes{Namespace: r.namespace, Verb: "get", Resource: "secrets"}},
	}
	if r.api {
		// The API replicas' account may do what the sidecar's may, and
		// no more.
		api := "system:serviceaccount:" + r.namespace + ":schedscope-api"
		for _, tt := range tests {
			if tt.user == sidecar {
				tt.who, tt.user = "api"+strings.TrimPrefix(tt.who, "sidecar"), api
				tests = append(tests, tt)
			}
		}
	}
	for _, tt := range tests {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: tt.user, Groups: groups, ResourceAttributes: &tt.ResourceAttributes}}
		got, err := controlPlane.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tt.allow {
			may := "may not"
			if got.Status.Allowed {
				may = "may"
			}
			a := tt.ResourceAttributes
			t.Errorf("%s: %s %s %s %s/%s %s %s/%s (%s)", tt.who, tt.user, may, a.Verb, a.Group, a.Resource, a.Subresource, a.Namespace, a.Name, got.Status.Reason)
		}
	}
}

// TestInstallUpgrade installs the chart with helm into a kube-apiserver of
// its own, upgrades it and uninstalls it: the upgrade changes the images
// and keeps the generated certificate and the APIService's caBundle (the
// kube-apiserver goes on trusting the sidecar); uninstalling keeps the
// database's claim and removes the rest.
func TestInstallUpgrade(t *testing.T) {
	cp := framework.StartTestControlPlane(t)
	ctx := context.Background()
	bin, err := framework.Binary("helm")
	if err != nil {
		t.Fatal(err)
	}
	const ns = "upgrade"
	helm := func(args ...string) {
		t.Helper()
		args = append(args, "--namespace", ns, "--kubeconfig", cp.Kubeconfig)
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// certificate returns the sidecar's certificate and the APIService's caBundle.
	certificate := func() (string, string) {
		t.Helper()
		s, err := cp.Client.CoreV1().Secrets(ns).Get(ctx, "schedscope-sidecar-tls", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.schedscope.io").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var svc struct {
			Spec struct {
				CABundle []byte `json:"caBundle"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(raw, &svc); err != nil {
			t.Fatal(err)
		}
		if err := verifyServing(base64.StdEncoding.EncodeToString(svc.Spec.CABundle), base64.StdEncoding.EncodeToString(s.Data["tls.crt"]),
			base64.StdEncoding.EncodeToString(s.Data["tls.key"]), "schedscope-sidecar."+ns+".svc"); err != nil {
			t.Errorf("the installed APIService's caBundle and Secret schedscope-sidecar-tls: %v", err)
		}
		return string(s.Data["tls.crt"]), string(svc.Spec.CABundle)
	}
	image := func() string {
		t.Helper()
		d, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, "schedscope", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}

	helm("install", "schedscope", framework.ChartDir(), "--create-namespace", "--set", "sidecar.persistence.enabled=true")
	crt, caBundle := certificate()
	helm("upgrade", "schedscope", framework.ChartDir(), "--reuse-values", "--set", "image.tag=v0.1.1")
	// The chart picks the scheduler built for the cluster's minor.
	server, err := cp.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if want := "ghcr.io/schedscope/schedscope-scheduler:v0.1.1-k8s" + server.Major + "." + server.Minor; image() != want {
		t.Errorf("after the upgrade the scheduler's image is %s, want %s", image(), want)
	}
	if crt2, caBundle2 := certificate(); crt2 != crt || caBundle2 != caBundle {
		t.Error("the upgrade replaced the sidecar's certificate or the APIService's caBundle")
	}

	helm("uninstall", "schedscope")
	if _, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "schedscope-data", metav1.GetOptions{}); err != nil {
		t.Errorf("uninstalling removed the database's claim: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, "schedscope", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("uninstalling left Deployment %s/schedscope", ns)
	}
}

// Package manifests applies the rendered deployment manifests
// (manifests/rendered) to a real kube-apiserver with server-side apply and
// strict field validation, reads every object back, and checks that the
// RBAC they grant is what the scheduler and the sidecar need.
package manifests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"sigs.k8s.io/yaml"

	schedulerapp "github.com/schedscope/schedscope/cmd/schedscope-scheduler/app"
	sidecarapp "github.com/schedscope/schedscope/cmd/schedscope-sidecar/app"
	"github.com/schedscope/schedscope/manifests"
	"github.com/schedscope/schedscope/test/framework"
)

const fieldManager = "schedscope-manifests-test"

var (
	controlPlane *framework.ControlPlane
	dyn          dynamic.Interface
	mapper       *restmapper.DeferredDiscoveryRESTMapper
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
	if dyn, err = dynamic.NewForConfig(controlPlane.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(controlPlane.Client.Discovery()))
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
	data, err := os.ReadFile(filepath.Join(manifests.Dir(), "..", path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decode splits a multi-document YAML file into objects (numbers as int64,
// as the apiserver returns them).
func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("reading YAML: %v", err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("decoding YAML: %v", err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("decoding object: %v\n%s", err, doc)
		}
		objs = append(objs, u)
	}
}

func TestRenderedUpToDate(t *testing.T) {
	if err := manifests.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestCopiesInStep keeps the files kustomize needs inside its roots equal
// to the examples in config/.
func TestCopiesInStep(t *testing.T) {
	for _, c := range []struct{ copy, original string }{
		{"manifests/base/scheduler-config.yaml", "config/scheduler-two-profiles.yaml"},
		{"manifests/overlays/tracing/tracing.yaml", "config/tracing.yaml"},
	} {
		if !bytes.Equal(repoFile(t, c.copy), repoFile(t, c.original)) {
			t.Errorf("%s differs from %s: copy it again", c.copy, c.original)
		}
	}

	var want []string
	for _, line := range strings.Split(string(repoFile(t, "config/sidecar.args")), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			want = append(want, line)
		}
	}
	for _, o := range decode(t, repoFile(t, "manifests/rendered/base.yaml")) {
		if o.GetKind() != "Deployment" {
			continue
		}
		got := containerArgs(t, o, "sidecar")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("sidecar args of the Deployment and config/sidecar.args differ (-sidecar.args +Deployment):\n%s", diff)
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

func applyCRD(t *testing.T) {
	t.Helper()
	crd := decode(t, repoFile(t, "test/integration/manifests/testdata/servicemonitor-crd.yaml"))[0]
	apply(t, crd)
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(gvr).Get(ctx, crd.GetName(), metav1.GetOptions{})
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
		t.Fatalf("CRD %s not established: %v", crd.GetName(), err)
	}
	mapper.Reset()
}

// resource maps an object to its REST resource.
func resource(t *testing.T, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := obj.GroupVersionKind()
	var m *meta.RESTMapping
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			mapper.Reset()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s %s: no such kind in the cluster", gvk, obj.GetName())
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			t.Fatalf("%s %s is namespaced but names no namespace", gvk.Kind, obj.GetName())
		}
		return dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	return dyn.Resource(m.Resource)
}

// apply applies obj with server-side apply and strict field validation, so
// an unknown or misspelt field is an error, and returns the object as stored.
func apply(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := resource(t, obj).Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: fieldManager, Force: new(true), FieldValidation: metav1.FieldValidationStrict})
	if err != nil {
		t.Fatalf("applying %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
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

// TestApply applies each rendered file in turn (base, then the overlays,
// like an upgrade) and reads every object back.
func TestApply(t *testing.T) {
	applyCRD(t)
	for _, o := range manifests.Overlays {
		t.Run(o.Name, func(t *testing.T) {
			objs := decode(t, repoFile(t, filepath.Join("manifests", "rendered", o.Name+".yaml")))
			if len(objs) == 0 {
				t.Fatal("no objects")
			}
			for _, obj := range objs {
				apply(t, obj)
			}
			kinds := map[string]int{}
			for _, obj := range objs {
				kinds[obj.GetKind()]++
				got, err := resource(t, obj).Get(context.Background(), obj.GetName(), metav1.GetOptions{})
				if err != nil {
					t.Errorf("reading back %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
					continue
				}
				id := fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
				for _, d := range contained(id, obj.Object, got.Object) {
					t.Error(d)
				}
			}
			checkObjects(t, o.Name, objs)
			t.Logf("applied %d objects: %v", len(objs), kinds)
		})
	}
	t.Run("RBAC", checkRBAC)
}

// checkObjects checks what each rendering must hold.
func checkObjects(t *testing.T, overlay string, objs []*unstructured.Unstructured) {
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
	for _, want := range []string{"--leader-elect=true", "--leader-elect-resource-name=schedscope-scheduler", "--leader-elect-resource-namespace=schedscope", "--config=/etc/schedscope/scheduler-config.yaml"} {
		if !slices.Contains(sched, want) {
			t.Errorf("scheduler args %q lack %s", sched, want)
		}
	}
	// The binaries accept every flag the manifests pass.
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
	if hasTracing != (overlay == "tracing") {
		t.Errorf("overlay %s: scheduler traces: %v", overlay, hasTracing)
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
			} else if len(c.Profiles) != 2 {
				t.Errorf("ConfigMap %s: %d profiles, want 2", cm.GetName(), len(c.Profiles))
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

	switch overlay {
	case "monitoring":
		if len(byKind["ServiceMonitor"]) != 1 {
			t.Errorf("%d ServiceMonitors, want 1", len(byKind["ServiceMonitor"]))
		}
	case "tracing":
		if len(byKind["Deployment"]) != 2 {
			t.Errorf("%d Deployments, want schedscope and jaeger", len(byKind["Deployment"]))
		}
	}
}

// checkRBAC asks the apiserver whether the pod's service account may do
// what the scheduler and the sidecar do.
func checkRBAC(t *testing.T) {
	sa := "system:serviceaccount:schedscope:schedscope"
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:schedscope", "system:authenticated"}
	tests := []struct {
		who string
		authorizationv1.ResourceAttributes
	}{
		{"scheduler: leader election", authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "create", Group: "coordination.k8s.io", Resource: "leases"}},
		{"scheduler: leader election", authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Name: "schedscope-scheduler"}},
		{"scheduler: leader election", authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "schedscope-scheduler"}},
		{"scheduler: binding", authorizationv1.ResourceAttributes{Namespace: "any", Verb: "create", Resource: "pods", Subresource: "binding"}},
		{"scheduler: status", authorizationv1.ResourceAttributes{Namespace: "any", Verb: "patch", Resource: "pods", Subresource: "status"}},
		{"scheduler: preemption", authorizationv1.ResourceAttributes{Namespace: "any", Verb: "delete", Resource: "pods"}},
		{"scheduler: volume binding", authorizationv1.ResourceAttributes{Verb: "list", Resource: "persistentvolumes"}},
		{"scheduler: volume binding", authorizationv1.ResourceAttributes{Namespace: "any", Verb: "update", Resource: "persistentvolumeclaims"}},
		{"scheduler: storage classes", authorizationv1.ResourceAttributes{Verb: "watch", Group: "storage.k8s.io", Resource: "storageclasses"}},
		{"both: delegated authentication", authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "configmaps", Name: "extension-apiserver-authentication"}},
		{"both: delegated authentication", authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"}},
		{"both: delegated authorization", authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}},
		{"sidecar: pods", authorizationv1.ResourceAttributes{Verb: "watch", Resource: "pods"}},
		{"sidecar: nodes", authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}},
		{"sidecar: events", authorizationv1.ResourceAttributes{Verb: "watch", Resource: "events"}},
	}
	for _, tt := range tests {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: sa, Groups: groups, ResourceAttributes: &tt.ResourceAttributes}}
		got, err := controlPlane.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Status.Allowed {
			a := tt.ResourceAttributes
			t.Errorf("%s: %s may not %s %s/%s %s/%s (%s)", tt.who, sa, a.Verb, a.Group, a.Resource, a.Namespace, a.Name, got.Status.Reason)
		}
	}
	// And nothing more than it needs on the lease of another scheduler.
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: sa, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "other-scheduler"}}}
	got, err := controlPlane.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Allowed {
		t.Error("the service account may update any lease in schedscope; want only schedscope-scheduler")
	}
}

// TestDashboard checks that the Grafana dashboard only queries metrics that
// exist: names documented in README.md and docs/sidecar.md.
func TestDashboard(t *testing.T) {
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := yaml.Unmarshal(repoFile(t, "manifests/grafana/schedscope-dashboard.json"), &dash); err != nil {
		t.Fatal(err)
	}
	documented := string(repoFile(t, "README.md")) + string(repoFile(t, "docs/sidecar.md"))
	if len(dash.Panels) == 0 {
		t.Fatal("no panels")
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			for _, word := range strings.FieldsFunc(target.Expr, func(r rune) bool {
				return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
			}) {
				if !strings.HasPrefix(word, "schedscope_") {
					continue
				}
				name := word
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					name = strings.TrimSuffix(name, suffix)
				}
				if !strings.Contains(documented, "`"+name+"`") {
					t.Errorf("panel %q queries %s, which README.md and docs/sidecar.md do not document", p.Title, word)
				}
			}
		}
	}
}

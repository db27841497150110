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
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	k8scorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	saadmission "k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
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

// applyCRDs applies the Prometheus Operator CRDs the monitoring overlay's
// objects need, from testdata/, and waits until they are established.
func applyCRDs(t *testing.T) {
	t.Helper()
	for _, file := range []string{"servicemonitor-crd.yaml", "prometheusrule-crd.yaml"} {
		crd := decode(t, repoFile(t, "test/integration/manifests/testdata/"+file))[0]
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
	applyCRDs(t)
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

	// The sidecar's account holds the sidecar's roles and nothing else.
	sidecarRoles := map[string]bool{"ClusterRole schedscope:sidecar": false, "Role extension-apiserver-authentication-reader": false}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, b := range byKind[kind] {
			roleKind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
			roleName, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
			subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
			for _, s := range subjects {
				s := s.(map[string]any)
				if s["kind"] != "ServiceAccount" || s["name"] != "schedscope-sidecar" || s["namespace"] != "schedscope" {
					continue
				}
				role := roleKind + " " + roleName
				if _, ok := sidecarRoles[role]; !ok {
					t.Errorf("%s %s binds %s to schedscope/schedscope-sidecar; the sidecar needs only %v", kind, b.GetName(), role, sidecarRoles)
				}
				sidecarRoles[role] = true
			}
		}
	}
	for role, bound := range sidecarRoles {
		if !bound {
			t.Errorf("%s is not bound to schedscope/schedscope-sidecar", role)
		}
	}

	checkTokens(t, deploy, byKind)

	switch overlay {
	case "monitoring":
		if len(byKind["ServiceMonitor"]) != 1 {
			t.Errorf("%d ServiceMonitors, want 1", len(byKind["ServiceMonitor"]))
		}
		checkMonitoring(t, byKind)
	case "tracing":
		if len(byKind["Deployment"]) != 2 {
			t.Errorf("%d Deployments, want schedscope and jaeger", len(byKind["Deployment"]))
		}
	}
}

// checkMonitoring checks that the ServiceMonitor scrapes the scheduler and
// the sidecar as the jobs the alert rules name, and that the PrometheusRule
// holds the groups of the rule file promtool tests.
func checkMonitoring(t *testing.T, byKind map[string][]*unstructured.Unstructured) {
	t.Helper()
	rules := string(repoFile(t, "manifests/alerts/schedscope.rules.yaml"))
	wantJobs := map[string]string{"scheduler": "schedscope-scheduler", "https": "schedscope-sidecar"}
	for _, sm := range byKind["ServiceMonitor"] {
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		gotJobs := map[string]string{}
		for _, ep := range endpoints {
			ep := ep.(map[string]any)
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
		t.Errorf("the PrometheusRule's groups differ from manifests/alerts/schedscope.rules.yaml (-rules file +PrometheusRule):\n%s", diff)
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
func checkRBAC(t *testing.T) {
	const (
		scheduler = "system:serviceaccount:schedscope:schedscope"
		sidecar   = "system:serviceaccount:schedscope:schedscope-sidecar"
	)
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:schedscope", "system:authenticated"}
	tests := []struct {
		who   string
		user  string
		allow bool
		authorizationv1.ResourceAttributes
	}{
		{"scheduler: leader election", scheduler, true, authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "create", Group: "coordination.k8s.io", Resource: "leases"}},
		{"scheduler: leader election", scheduler, true, authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Name: "schedscope-scheduler"}},
		{"scheduler: leader election", scheduler, true, authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "schedscope-scheduler"}},
		{"scheduler: only its own lease", scheduler, false, authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "other-scheduler"}},
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
		{"sidecar: namespaces", sidecar, true, authorizationv1.ResourceAttributes{Verb: "get", Resource: "namespaces", Name: "any"}},
		{"sidecar: delegated authentication", sidecar, true, authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "configmaps", Name: "extension-apiserver-authentication"}},
		{"sidecar: delegated authentication", sidecar, true, authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"}},
		{"sidecar: delegated authorization", sidecar, true, authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}},
		// None of the scheduler's rights.
		{"sidecar: no preemption", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "delete", Resource: "pods"}},
		{"sidecar: no binding", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "create", Resource: "pods", Subresource: "binding"}},
		{"sidecar: no binding", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "create", Resource: "bindings"}},
		{"sidecar: no pod status", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "any", Verb: "patch", Resource: "pods", Subresource: "status"}},
		{"sidecar: no leader election", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "schedscope-scheduler"}},
		{"sidecar: no scheduler's token", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "create", Resource: "serviceaccounts", Subresource: "token", Name: "schedscope"}},
		{"sidecar: no secrets", sidecar, false, authorizationv1.ResourceAttributes{Namespace: "schedscope", Verb: "get", Resource: "secrets"}},
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

// TestDashboard checks that the Grafana dashboard only queries metrics that
// exist: names documented in README.md and docs/sidecar.md, each filtered
// by the job variable.
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
			if !strings.Contains(target.Expr, `{job=~"$job"`) {
				t.Errorf("panel %q queries %s, not filtered by job=~\"$job\"", p.Title, target.Expr)
			}
			for _, word := range strings.FieldsFunc(target.Expr, func(r rune) bool {
				return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
			}) {
				if !strings.HasPrefix(word, "schedscope_") {
					continue
				}
				if !strings.Contains(target.Expr, word+`{job=~"$job"`) {
					t.Errorf("panel %q queries %s without job=~\"$job\"", p.Title, word)
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

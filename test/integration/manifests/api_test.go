package manifests

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	sidecarapp "github.com/schedscope/schedscope/cmd/schedscope-sidecar/app"
)

// checkAPI checks the serve-only API of api.enabled: Deployment
// schedscope-api runs the sidecar with --follow=false against the store
// the sidecar beside the scheduler writes, both with the connection from
// the values' Secret as env; Service schedscope-api and the
// PodDisruptionBudget select the API's pods and only them, the sidecar's
// Service the scheduler's pod only; the replicas run as schedscope-api.
// Without api.enabled nothing of it is rendered.
func checkAPI(t *testing.T, r release, byKind map[string][]*unstructured.Unstructured) {
	t.Helper()
	named := map[string]*unstructured.Unstructured{}
	for kind, objs := range byKind {
		for _, o := range objs {
			named[kind+"/"+o.GetName()] = o
		}
	}
	if !r.api {
		for _, id := range []string{"Deployment/schedscope-api", "Service/schedscope-api", "PodDisruptionBudget/schedscope-api", "ServiceAccount/schedscope-api"} {
			if named[id] != nil {
				t.Errorf("%s rendered without api.enabled", id)
			}
		}
		return
	}
	var (
		sched, api   appsv1.Deployment
		apiSvc, sSvc corev1.Service
		pdb          policyv1.PodDisruptionBudget
	)
	for id, into := range map[string]any{
		"Deployment/schedscope": &sched, "Deployment/schedscope-api": &api,
		"Service/schedscope-api": &apiSvc, "Service/schedscope-sidecar": &sSvc, "PodDisruptionBudget/schedscope-api": &pdb,
	} {
		if named[id] == nil {
			t.Fatalf("no %s", id)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(named[id].Object, into); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}

	// Who selects whom.
	apiPod, schedPod := labels.Set(api.Spec.Template.Labels), labels.Set(sched.Spec.Template.Labels)
	selects := func(what string, sel labels.Selector, pod labels.Set, want bool) {
		if got := sel.Matches(pod); got != want {
			t.Errorf("%s selects the pod labelled %v: %v, want %v", what, pod, got, want)
		}
	}
	selector := func(ls *metav1.LabelSelector) labels.Selector {
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatal(err)
		}
		return sel
	}
	selects("Service schedscope-api", labels.SelectorFromSet(apiSvc.Spec.Selector), apiPod, true)
	selects("Service schedscope-api", labels.SelectorFromSet(apiSvc.Spec.Selector), schedPod, false)
	selects("Service schedscope-sidecar", labels.SelectorFromSet(sSvc.Spec.Selector), schedPod, true)
	selects("Service schedscope-sidecar", labels.SelectorFromSet(sSvc.Spec.Selector), apiPod, false)
	selects("Deployment schedscope", selector(sched.Spec.Selector), apiPod, false)
	selects("Deployment schedscope-api", selector(api.Spec.Selector), schedPod, false)
	selects("PodDisruptionBudget schedscope-api", selector(pdb.Spec.Selector), apiPod, true)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget schedscope-api: minAvailable %v, want 1", pdb.Spec.MinAvailable)
	}
	if api.Spec.Replicas == nil || *api.Spec.Replicas != 2 {
		t.Errorf("Deployment schedscope-api: replicas %v, want 2", api.Spec.Replicas)
	}

	// The replicas' identity, spread and container.
	spec := api.Spec.Template.Spec
	if spec.ServiceAccountName != "schedscope-api" || (spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken) {
		t.Errorf("the API's pods run as %q (automount %v), want schedscope-api with its token", spec.ServiceAccountName, spec.AutomountServiceAccountToken)
	}
	if a := spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
		t.Errorf("the API's pods are not spread across nodes: affinity %+v", spec.Affinity)
	} else {
		selects("the API's anti-affinity", selector(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector), apiPod, true)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("the API's pod has %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == apiSvc.Spec.Ports[0].TargetPort.String() }) {
		t.Errorf("Service schedscope-api targets port %s, which the API's container does not name", apiSvc.Spec.Ports[0].TargetPort.String())
	}
	fs := pflag.NewFlagSet("schedscope-sidecar", pflag.ContinueOnError)
	o := sidecarapp.NewOptions()
	o.AddFlags(fs)
	if err := fs.Parse(c.Args); err != nil {
		t.Errorf("schedscope-sidecar rejects the API's args: %v", err)
	}
	if o.Follow || o.Store != "$(SCHEDSCOPE_STORE)" {
		t.Errorf("the API's args %q: follow %v, store %q; want --follow=false and the store from $(SCHEDSCOPE_STORE)", c.Args, o.Follow, o.Store)
	}

	// The follower and the API read the store from the Secret, the
	// password as PGPASSWORD, and verify the server with the values' CA.
	wantEnv := map[string]string{
		"SCHEDSCOPE_STORE": "Secret schedscope-postgres key url", "PGPASSWORD": "Secret schedscope-postgres key password",
		"PGSSLROOTCERT": "value /etc/schedscope/postgres-ca/ca.crt", "PGSSLMODE": "value verify-full",
	}
	for _, c := range slices.Concat(sched.Spec.Template.Spec.Containers, spec.Containers) {
		if c.Name == "scheduler" {
			continue
		}
		got := map[string]string{}
		for _, e := range c.Env {
			if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
				got[e.Name] = fmt.Sprintf("Secret %s key %s", ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
			} else {
				got[e.Name] = "value " + e.Value
			}
		}
		if diff := cmp.Diff(wantEnv, got); diff != "" {
			t.Errorf("container %s: env (-want +got):\n%s", c.Name, diff)
		}
		if !slices.Contains(c.Args, "--store=$(SCHEDSCOPE_STORE)") {
			t.Errorf("container %s: args %q lack --store=$(SCHEDSCOPE_STORE)", c.Name, c.Args)
		}
	}
	// The server's CA, from the values' Secret, where PGSSLROOTCERT says.
	for _, d := range []appsv1.Deployment{sched, api} {
		i := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "postgres-ca" })
		if i < 0 || d.Spec.Template.Spec.Volumes[i].Secret == nil || d.Spec.Template.Spec.Volumes[i].Secret.SecretName != "schedscope-postgres-ca" {
			t.Errorf("Deployment %s: no volume postgres-ca of Secret schedscope-postgres-ca", d.Name)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == "postgres-ca" && m.MountPath == "/etc/schedscope/postgres-ca" && m.ReadOnly
			})
			if mounted != (c.Name != "scheduler") {
				t.Errorf("Deployment %s, container %s: mounts the server's CA at /etc/schedscope/postgres-ca: %v", d.Name, c.Name, mounted)
			}
		}
	}
}

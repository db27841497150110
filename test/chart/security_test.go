package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// monitoringNamespace is the default peer of networkPolicy.metrics.from.
var monitoringNamespace = networkingv1.NetworkPolicyPeer{
	NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}},
}

// networkPolicy decodes the chart's NetworkPolicy named name.
func networkPolicy(t *testing.T, objs []*unstructured.Unstructured, name string) networkingv1.NetworkPolicy {
	t.Helper()
	var np networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, objs, "NetworkPolicy", name).Object, &np); err != nil {
		t.Fatal(err)
	}
	return np
}

// podLabels returns the labels of the pods of Deployment name.
func podLabels(t *testing.T, objs []*unstructured.Unstructured, name string) labels.Set {
	t.Helper()
	l, _, _ := unstructured.NestedStringMap(find(t, objs, "Deployment", name).Object, "spec", "template", "metadata", "labels")
	return l
}

// TestNetworkPolicy checks the NetworkPolicy the chart renders by default
// and with each of its values: which pods it selects, and which sources
// each of their ports admits; every other ingress is denied.
func TestNetworkPolicy(t *testing.T) {
	tcp := func(port int32) networkingv1.NetworkPolicyPort {
		protocol, p := corev1.ProtocolTCP, intstr.FromInt32(port)
		return networkingv1.NetworkPolicyPort{Protocol: &protocol, Port: &p}
	}
	apiServerPort := []networkingv1.NetworkPolicyPort{tcp(10263)}
	metricsPorts := []networkingv1.NetworkPolicyPort{tcp(10259), tcp(10263)}
	tests := []struct {
		name string
		set  []string
		want []networkingv1.NetworkPolicyIngressRule
	}{
		{
			name: "defaults: the API's port from every source, /metrics from the namespace monitoring",
			want: []networkingv1.NetworkPolicyIngressRule{
				{Ports: apiServerPort},
				{From: []networkingv1.NetworkPolicyPeer{monitoringNamespace}, Ports: metricsPorts},
			},
		},
		{
			name: "the control plane's addresses and pods",
			set: []string{
				"networkPolicy.apiServer.cidrs={10.0.0.0/28,fd00::/120}",
				"networkPolicy.apiServer.from[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=kube-system",
				"networkPolicy.apiServer.from[0].podSelector.matchLabels.component=kube-apiserver",
			},
			want: []networkingv1.NetworkPolicyIngressRule{
				{
					From: []networkingv1.NetworkPolicyPeer{
						{
							NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
							PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"component": "kube-apiserver"}},
						},
						{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/28"}},
						{IPBlock: &networkingv1.IPBlock{CIDR: "fd00::/120"}},
					},
					Ports: apiServerPort,
				},
				{From: []networkingv1.NetworkPolicyPeer{monitoringNamespace}, Ports: metricsPorts},
			},
		},
		{
			name: "no monitoring sources, other ports",
			set: []string{
				"networkPolicy.apiServer.cidrs={10.0.0.0/28}", "networkPolicy.metrics.from=null",
				"scheduler.securePort=8259", "sidecar.securePort=8263",
			},
			want: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/28"}}}, Ports: []networkingv1.NetworkPolicyPort{tcp(8263)}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := networkPolicy(t, render(t, "schedscope", tt.set...), "schedscope")
			if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes); diff != "" {
				t.Errorf("policyTypes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, np.Spec.Ingress); diff != "" {
				t.Errorf("ingress rules (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("selects the scheduler's and the API's pods, not the test pod", func(t *testing.T) {
		objs := render(t, "schedscope", "sidecar.store.type=postgres", "sidecar.store.postgres.secretName=pg", "api.enabled=true")
		np := networkPolicy(t, objs, "schedscope")
		selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		for _, deploy := range []string{"schedscope", "schedscope-api"} {
			if l := podLabels(t, objs, deploy); !selector.Matches(l) {
				t.Errorf("the NetworkPolicy (%s) does not select the pods of Deployment %s (%v)", selector, deploy, l)
			}
		}
		if l := labels.Set(find(t, objs, "Pod", "schedscope-test").GetLabels()); selector.Matches(l) {
			t.Errorf("the NetworkPolicy (%s) selects the test pod (%v)", selector, l)
		}
		if l := podLabels(t, render(t, "other"), "other-schedscope"); selector.Matches(l) {
			t.Errorf("the NetworkPolicy (%s) selects release other's pods (%v)", selector, l)
		}
	})

	t.Run("networkPolicy.enabled false", func(t *testing.T) {
		for _, o := range render(t, "schedscope", "networkPolicy.enabled=false") {
			if o.GetKind() == "NetworkPolicy" {
				t.Errorf("NetworkPolicy %s rendered", o.GetName())
			}
		}
	})
}

// servicePorts returns each port of Service name as "NAME PORT→TARGET".
func servicePorts(t *testing.T, objs []*unstructured.Unstructured, name string) []string {
	t.Helper()
	var ports []string
	for _, p := range slice(find(t, objs, "Service", name).Object, "spec", "ports") {
		p := p.(map[string]any)
		ports = append(ports, fmt.Sprintf("%v %v→%v", p["name"], p["port"], p["targetPort"]))
	}
	return ports
}

// TestServicePorts checks that the Service the APIService names reaches
// the sidecar's port alone, and that the scheduler's /metrics has a
// Service of its own, which the ServiceMonitor's scheduler endpoint scrapes.
func TestServicePorts(t *testing.T) {
	objs := render(t, "schedscope", "serviceMonitor.enabled=true")
	if diff := cmp.Diff([]string{"https 443→https"}, servicePorts(t, objs, "schedscope-sidecar")); diff != "" {
		t.Errorf("Service schedscope-sidecar's ports (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"scheduler 10259→scheduler"}, servicePorts(t, objs, "schedscope-scheduler-metrics")); diff != "" {
		t.Errorf("Service schedscope-scheduler-metrics's ports (-want +got):\n%s", diff)
	}
	sm := find(t, objs, "ServiceMonitor", "schedscope")
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for _, svc := range []string{"schedscope-sidecar", "schedscope-scheduler-metrics"} {
		if l := labels.Set(find(t, objs, "Service", svc).GetLabels()); !labels.SelectorFromSet(selector).Matches(l) {
			t.Errorf("the ServiceMonitor (%v) does not select Service %s (%v)", selector, svc, l)
		}
	}
}

// TestServiceMonitorTLS checks that Prometheus verifies the sidecar's
// certificate with the CA the APIService's caBundle holds, for a name the
// certificate covers, with each source of the certificate.
func TestServiceMonitorTLS(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		// wantCA is the tlsConfig's ca.
		wantCA map[string]any
		// check checks that the object wantCA names holds the CA.
		check func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{
			name:   "generate",
			wantCA: map[string]any{"secret": map[string]any{"name": "schedscope-sidecar-tls", "key": "ca.crt"}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				secret := find(t, objs, "Secret", "schedscope-sidecar-tls")
				ca, _, _ := unstructured.NestedString(secret.Object, "data", "ca.crt")
				caBundle, _, _ := unstructured.NestedString(find(t, objs, "APIService", "v1alpha1.schedscope.io").Object, "spec", "caBundle")
				if ca == "" || ca != caBundle {
					t.Errorf("Secret schedscope-sidecar-tls's ca.crt is not the APIService's caBundle")
				}
			},
		},
		{
			name:   "cert-manager",
			set:    []string{"apiService.certificate.source=certManager"},
			wantCA: map[string]any{"secret": map[string]any{"name": "schedscope-sidecar-tls", "key": "ca.crt"}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if got, _, _ := unstructured.NestedString(find(t, objs, "Certificate", "schedscope-sidecar").Object, "spec", "secretName"); got != "schedscope-sidecar-tls" {
					t.Errorf("the Certificate's secretName %q, want schedscope-sidecar-tls", got)
				}
			},
		},
		{
			name:   "secret",
			set:    []string{"apiService.certificate.source=secret", "apiService.certificate.secretName=my-tls", "apiService.certificate.caBundle=CA PEM"},
			wantCA: map[string]any{"configMap": map[string]any{"name": "schedscope-sidecar-ca", "key": "ca.crt"}},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if got, _, _ := unstructured.NestedString(find(t, objs, "ConfigMap", "schedscope-sidecar-ca").Object, "data", "ca.crt"); strings.TrimSpace(got) != "CA PEM" {
					t.Errorf("ConfigMap schedscope-sidecar-ca's ca.crt %q, want apiService.certificate.caBundle", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, "schedscope", append([]string{"serviceMonitor.enabled=true"}, tt.set...)...)
			got := map[string]any{}
			for _, e := range slice(find(t, objs, "ServiceMonitor", "schedscope").Object, "spec", "endpoints") {
				e := e.(map[string]any)
				got[fmt.Sprint(e["port"])], _, _ = unstructured.NestedMap(e, "tlsConfig")
			}
			want := map[string]any{
				"https":     map[string]any{"ca": tt.wantCA, "serverName": "schedscope-sidecar.schedscope.svc"},
				"scheduler": map[string]any{"ca": tt.wantCA, "serverName": "schedscope-scheduler-metrics.schedscope.svc"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("each endpoint's tlsConfig, by port (-want +got):\n%s", diff)
			}
			tt.check(t, objs)
		})
	}

	t.Run("serverName is a name of the certificate the endpoint serves", func(t *testing.T) {
		objs := render(t, "lens", "serviceMonitor.enabled=true")
		crt, _, _ := unstructured.NestedString(find(t, objs, "Secret", "lens-schedscope-sidecar-tls").Object, "data", "tls.crt")
		dns := certificateDNSNames(t, crt)
		for _, e := range slice(find(t, objs, "ServiceMonitor", "lens-schedscope").Object, "spec", "endpoints") {
			e := e.(map[string]any)
			serverName, _, _ := unstructured.NestedString(e, "tlsConfig", "serverName")
			if serverName == "" || !slices.Contains(dns, serverName) {
				t.Errorf("port %v: serverName %q is not one of the certificate's names %v", e["port"], serverName, dns)
			}
		}
		// The scheduler serves that certificate.
		var args []any
		for _, c := range slice(find(t, objs, "Deployment", "lens-schedscope").Object, "spec", "template", "spec", "containers") {
			if c := c.(map[string]any); c["name"] == "scheduler" {
				args, _, _ = unstructured.NestedSlice(c, "args")
			}
		}
		for _, want := range []string{"--tls-cert-file=/etc/schedscope-tls/tls.crt", "--tls-private-key-file=/etc/schedscope-tls/tls.key"} {
			if !slices.Contains(args, any(want)) {
				t.Errorf("the scheduler's args lack %s: %v", want, args)
			}
		}
	})
}

// TestScratchVolumes checks that the scheduler and the sidecar each mount
// an emptyDir of their own at /tmp, of the size their value sets.
func TestScratchVolumes(t *testing.T) {
	objs := render(t, "schedscope", "scheduler.tmpSizeLimit=32Mi", "sidecar.tmpSizeLimit=128Mi")
	deploy := find(t, objs, "Deployment", "schedscope")
	sizes := map[string]any{}
	for _, v := range slice(deploy.Object, "spec", "template", "spec", "volumes") {
		v := v.(map[string]any)
		if size, ok, _ := unstructured.NestedString(v, "emptyDir", "sizeLimit"); ok {
			sizes[v["name"].(string)] = size
		}
	}
	for c, want := range map[string]string{"scheduler": "32Mi", "sidecar": "128Mi"} {
		var tmp []string
		for _, m := range slice(container(t, deploy, c), "volumeMounts") {
			if m := m.(map[string]any); m["mountPath"] == "/tmp" {
				tmp = append(tmp, m["name"].(string))
			}
		}
		if diff := cmp.Diff([]string{c + "-tmp"}, tmp); diff != "" {
			t.Errorf("%s's /tmp mounts (-want +got):\n%s", c, diff)
		}
		if sizes[c+"-tmp"] != want {
			t.Errorf("volume %s-tmp: emptyDir sizeLimit %v, want %s", c, sizes[c+"-tmp"], want)
		}
	}
}

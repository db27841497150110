package image

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/test/framework"
	"github.com/schedscope/schedscope/test/freeport"
	"github.com/schedscope/schedscope/test/pgserver"
)

// runningPod is a pod the test runs: its Deployment, labels, and the host
// port of each named container port.
type runningPod struct {
	name   string
	labels labels.Set
	ports  map[string]int
}

// TestImagesRunThePostgresTopology runs the chart's topology beyond one
// machine (ci/postgres-values.yaml) from the images: the scheduler with
// its sidecar following into a real PostgreSQL, and the two replicas of
// Deployment schedscope-api serving from it, each container with the
// args, env (the store's URL from the values' Secret, expanded into
// --store; the server's CA mounted from its Secret) and service account
// the chart renders. The kube-apiserver's
// way to the explain API is followed as the cluster would: APIService →
// its Service → the pods the Service's selector selects → their port.
// It must reach exactly the API replicas, and each explains the pod the
// scheduler bound, over TLS verified by the APIService's caBundle.
func TestImagesRunThePostgresTopology(t *testing.T) {
	images := buildImages(t)
	ctx := t.Context()
	pg, err := pgserver.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	storeURL, err := pg.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cp := framework.StartTestControlPlane(t)

	ports := map[string]int{}
	for _, p := range []string{"scheduler.securePort", "scheduler.recordStreamPort", "sidecar.securePort", "api-0", "api-1"} {
		if ports[p], err = freeport.Get(); err != nil {
			t.Fatal(err)
		}
	}
	set := []string{"scheduler.replicas=1"}
	for _, p := range []string{"scheduler.securePort", "scheduler.recordStreamPort", "sidecar.securePort"} {
		set = append(set, fmt.Sprintf("%s=%d", p, ports[p]))
	}
	byName := applyChart(t, cp, []string{filepath.Join(framework.ChartDir(), "ci", "postgres-values.yaml")}, set)
	// The existing Secret the values name: the URL without a password,
	// the password apart (pgserver trusts its local connections).
	if _, err := cp.Client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "schedscope-postgres"},
		StringData: map[string]string{"url": storeURL, "password": "unused-by-trust"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// And the server's CA (pgx reads and parses PGSSLROOTCERT's file even
	// with sslmode=disable): any PEM certificate.
	ca, err := os.ReadFile(filepath.Join(cp.Dir, "apiserver-certs", "apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "schedscope-postgres-ca"},
		Data:       map[string][]byte{"ca.crt": ca},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// One pod of Deployment schedscope, every replica of schedscope-api,
	// each replica on its own port (in a cluster, its own address).
	var pods []runningPod
	for _, name := range []string{"schedscope", "schedscope-api"} {
		var d appsv1.Deployment
		if byName["Deployment/"+name] == nil {
			t.Fatalf("the chart renders no Deployment %s", name)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byName["Deployment/"+name].Object, &d); err != nil {
			t.Fatal(err)
		}
		replicas := 1
		if name == "schedscope-api" {
			replicas = int(*d.Spec.Replicas)
		}
		for i := range replicas {
			pod := runningPod{name: fmt.Sprintf("%s-%d", name, i), labels: d.Spec.Template.Labels, ports: map[string]int{}}
			host := &kubelet{t: t, cp: cp, objs: byName, dir: t.TempDir(), pod: d.Spec.Template.Spec}
			for _, c := range d.Spec.Template.Spec.Containers {
				image := images[c.Name]
				var extra []string
				if c.Name == "api" {
					image = images["sidecar"]
					port := ports[fmt.Sprintf("api-%d", i)]
					extra = []string{fmt.Sprintf("--secure-port=%d", port)}
					pod.ports["https"] = port
				} else {
					for _, p := range c.Ports {
						pod.ports[p.Name] = int(p.ContainerPort)
					}
				}
				host.run(c, image, extra...)
			}
			t.Cleanup(func() {
				if t.Failed() {
					host.logs()
				}
			})
			pods = append(pods, pod)
		}
	}

	// The kube-apiserver's way: APIService → Service → selected pods.
	apiService := byName["APIService/v1alpha1.schedscope.io"]
	if apiService == nil {
		t.Fatal("the chart renders no APIService")
	}
	svcName, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "name")
	var svc corev1.Service
	if byName["Service/"+svcName] == nil {
		t.Fatalf("the APIService names Service %s, which the chart does not render", svcName)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byName["Service/"+svcName].Object, &svc); err != nil {
		t.Fatal(err)
	}
	port := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == 443 })
	if port < 0 {
		t.Fatalf("Service %s has no port 443, which the APIService names", svcName)
	}
	targetPort := svc.Spec.Ports[port].TargetPort.String()
	var endpoints []runningPod
	for _, p := range pods {
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(p.labels) {
			endpoints = append(endpoints, p)
		}
	}
	var endpointNames []string
	for _, p := range endpoints {
		endpointNames = append(endpointNames, p.name)
	}
	if want := []string{"schedscope-api-0", "schedscope-api-1"}; !slices.Equal(endpointNames, want) {
		t.Fatalf("the APIService's Service %s selects %q, want the API replicas %q", svcName, endpointNames, want)
	}

	// The name the kube-apiserver verifies: the APIService's Service.
	client := caBundleClient(t, apiService, svcName)
	bindDemoPod(t, cp)

	for _, p := range endpoints {
		exp := explain(t, client, fmt.Sprintf("https://127.0.0.1:%d", p.ports[targetPort]), cp.Config.BearerToken, "demo", "web", 60*time.Second)
		if exp.Result != v1alpha1.ResultScheduled || exp.SelectedNode != "image-node" || exp.Profile != "schedscope" {
			t.Errorf("%s explains demo/web: result %q on %q by profile %q, want scheduled on image-node by schedscope", p.name, exp.Result, exp.SelectedNode, exp.Profile)
		}
		t.Logf("%s (selected by Service %s, which the APIService names) explains demo/web from PostgreSQL over TLS verified by the caBundle: attempt %d, result %s, node %s, profile %s, %d node(s) evaluated, %d feasible",
			p.name, svcName, exp.Attempt, exp.Result, exp.SelectedNode, exp.Profile, exp.Nodes.Evaluated, exp.Nodes.Feasible)
	}
}

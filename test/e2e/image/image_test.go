// Package image runs schedscope's OCI images, built by `make image`, with
// podman against a real kube-apiserver, as the Helm chart deploys them:
// the chart's objects applied, each container with the arguments, files,
// read-only root and service account the chart renders. The scheduler
// image schedules a pod; the sidecar image explains it through its API,
// served with the certificate the APIService's caBundle verifies: in the
// default topology (one pod, SQLite) and in the one beyond one machine
// (the records in PostgreSQL, the API served by replicas of its own). In
// the default topology the chart's `helm test` pod runs from the sidecar
// image too, and asks through the kube-apiserver.
package image

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/version"
	"github.com/schedscope/schedscope/test/framework"
	"github.com/schedscope/schedscope/test/freeport"
)

const (
	// imagePrefix and imageTag name the images the test builds.
	imagePrefix = "localhost/schedscope-test"
	imageTag    = "test"
	namespace   = "schedscope"
)

// k8sVersion is the release of k8s.io/kubernetes the newest minor's
// scheduler is built with, which this test is built with too.
var k8sVersion = version.Kubernetes()

// podman runs podman with the repository's containers.conf.
func podman(args ...string) ([]byte, error) {
	cmd := exec.Command("podman", args...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(framework.RepoRoot(), "hack", "podman", "containers.conf"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// buildImages runs `make image` and returns the image of each container.
func buildImages(t *testing.T) map[string]string {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("podman is needed to build and run the images (apt-get install podman runc): %v", err)
	}
	start := time.Now()
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE_PREFIX="+imagePrefix, "IMAGE_TAG="+imageTag)
	cmd.Dir = framework.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Logf("make image took %v", time.Since(start).Round(100*time.Millisecond))
	return map[string]string{
		"scheduler": imagePrefix + "/schedscope-scheduler:" + schedulerTag(),
		"sidecar":   imagePrefix + "/schedscope-sidecar:" + imageTag,
	}
}

// schedulerTag is the tag make image gives the newest minor's scheduler
// image: imageTag-k8s<major>.<minor>.
func schedulerTag() string {
	major, rest, _ := strings.Cut(strings.TrimPrefix(k8sVersion, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	return imageTag + "-k8s" + major + "." + minor
}

// imageInfo is what podman image inspect tells of an image.
type imageInfo struct {
	Size   int64
	Config struct {
		User       string
		Entrypoint []string
		Labels     map[string]string
	}
	Annotations map[string]string
}

// checkImage checks an image's user, labels (its license among them) and
// annotations, and that it has no shell, and returns its size.
func checkImage(t *testing.T, ref, binary string) int64 {
	t.Helper()
	out, err := podman("image", "inspect", ref)
	if err != nil {
		t.Fatal(err)
	}
	var infos []imageInfo
	if err := json.Unmarshal(out, &infos); err != nil || len(infos) != 1 {
		t.Fatalf("podman image inspect %s: %v\n%s", ref, err, out)
	}
	info := infos[0]
	if info.Config.User != "65532:65532" {
		t.Errorf("%s runs as %q, want 65532:65532", ref, info.Config.User)
	}
	if want := "/" + binary; len(info.Config.Entrypoint) != 1 || info.Config.Entrypoint[0] != want {
		t.Errorf("%s: entrypoint %q, want [%s]", ref, info.Config.Entrypoint, want)
	}
	for what, meta := range map[string]map[string]string{"label": info.Config.Labels, "annotation": info.Annotations} {
		if meta["io.schedscope.kubernetes.version"] != k8sVersion || meta["org.opencontainers.image.version"] == "" || meta["org.opencontainers.image.title"] != binary {
			t.Errorf("%s: %ss %v lack schedscope's version, title %s and Kubernetes version %s", ref, what, meta, binary, k8sVersion)
		}
	}
	if got := info.Config.Labels["org.opencontainers.image.licenses"]; got != "Apache-2.0" {
		t.Errorf("%s: label org.opencontainers.image.licenses %q, want Apache-2.0", ref, got)
	}
	if out, err := podman("run", "--rm", "--entrypoint", "/bin/sh", ref, "-c", "true"); err == nil {
		t.Errorf("%s has a shell: /bin/sh ran: %s", ref, out)
	}
	t.Logf("%s: %.1f MiB, user %s, version %s, Kubernetes %s", ref, float64(info.Size)/(1<<20), info.Config.User,
		info.Config.Labels["org.opencontainers.image.version"], info.Config.Labels["io.schedscope.kubernetes.version"])
	return info.Size
}

func TestImagesRunTheChart(t *testing.T) {
	images := buildImages(t)
	checkImage(t, images["scheduler"], "schedscope-scheduler")
	checkImage(t, images["sidecar"], "schedscope-sidecar")

	cp := framework.StartTestControlPlane(t)
	ports := map[string]int{}
	for _, p := range []string{"scheduler.securePort", "scheduler.recordStreamPort", "sidecar.securePort"} {
		port, err := freeport.Get()
		if err != nil {
			t.Fatal(err)
		}
		ports[p] = port
	}
	var set []string
	for p, port := range ports {
		set = append(set, fmt.Sprintf("%s=%d", p, port))
	}
	byName := applyChart(t, cp, nil, set)
	d := byName["Deployment/schedscope"]
	if d == nil {
		t.Fatal("the chart renders no Deployment schedscope")
	}
	tmpl, _, _ := unstructured.NestedMap(d.Object, "spec", "template")
	var deploy corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &deploy); err != nil {
		t.Fatal(err)
	}

	host := &kubelet{t: t, cp: cp, objs: byName, dir: t.TempDir(), pod: deploy.Spec}
	for _, c := range deploy.Spec.Containers {
		host.run(c, images[c.Name])
	}

	// The sidecar serves the certificate the APIService's caBundle verifies.
	client := caBundleClient(t, byName["APIService/v1alpha1.schedscope.io"], "schedscope-sidecar")
	sidecarURL := fmt.Sprintf("https://127.0.0.1:%d", ports["sidecar.securePort"])

	bindDemoPod(t, cp)

	// The sidecar explains it, to the admin, through its API.
	exp := explain(t, client, sidecarURL, cp.Config.BearerToken, "demo", "web", 30*time.Second)
	if exp.Result != v1alpha1.ResultScheduled || exp.SelectedNode != "image-node" || exp.Profile != "schedscope" {
		t.Errorf("explanation of demo/web: result %q on %q by profile %q, want scheduled on image-node by schedscope", exp.Result, exp.SelectedNode, exp.Profile)
	}
	t.Logf("sidecar explains demo/web over TLS verified by the APIService's caBundle: attempt %d, result %s, node %s, profile %s, %d node(s) evaluated, %d feasible",
		exp.Attempt, exp.Result, exp.SelectedNode, exp.Profile, exp.Nodes.Evaluated, exp.Nodes.Feasible)

	// helm test: its pod asks the explain API through the kube-apiserver.
	var sidecarRendered string
	for _, c := range deploy.Spec.Containers {
		if c.Name == "sidecar" {
			sidecarRendered = c.Image
		}
	}
	runHelmTest(t, cp, byName, set, sidecarRendered, images["sidecar"], ports["sidecar.securePort"])
}

// applyChart renders the chart with valuesFiles and set, applies its
// objects in namespace and returns them by kind/name.
func applyChart(t *testing.T, cp *framework.ControlPlane, valuesFiles, set []string) map[string]*unstructured.Unstructured {
	t.Helper()
	ctx := t.Context()
	rendered, err := framework.RenderChart(namespace, valuesFiles, set...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.DecodeYAML(rendered)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applier, err := cp.NewApplier("schedscope-image-test")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if _, err := applier.Apply(ctx, o); err != nil {
			t.Fatal(err)
		}
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	return byName
}

// caBundleClient is an HTTPS client that trusts the APIService's caBundle
// alone and verifies the name of service, as the kube-apiserver does.
func caBundleClient(t *testing.T, apiService *unstructured.Unstructured, service string) *http.Client {
	t.Helper()
	if apiService == nil {
		t.Fatal("the chart renders no APIService")
	}
	caBundle, _, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle")
	ca, err := base64.StdEncoding.DecodeString(caBundle)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("the APIService's caBundle holds no certificate")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: service + "." + namespace + ".svc",
	}}}
}

// bindDemoPod makes node image-node and pod demo/web for the scheduler's
// first profile, and waits until the scheduler binds it.
func bindDemoPod(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "image-node", Labels: map[string]string{corev1.LabelHostname: "image-node"}}}
	if err := framework.CreateNode(ctx, cp.Client, node, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := framework.CreatePods(ctx, cp.Client, "demo", "schedscope", 1, func(int) string { return "web" }); err != nil {
		t.Fatal(err)
	}
	if err := framework.WaitForBound(ctx, cp.Client, "demo", 1, 60*time.Second); err != nil {
		t.Fatalf("the scheduler image did not bind the pod: %v", err)
	}
}

// explain asks the explain API at base, as the bearer of token, why pod
// namespace/name is where it is, until it answers or timeout passes.
func explain(t *testing.T, client *http.Client, base, token, namespace, name string, timeout time.Duration) v1alpha1.Explanation {
	t.Helper()
	var exp v1alpha1.Explanation
	path := v1alpha1.Prefix + "namespaces/" + namespace + "/pods/" + name + "/explain"
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Logf("GET %s%s: %v", base, path, err)
			return false, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Logf("GET %s%s: %d %s", base, path, resp.StatusCode, strings.TrimSpace(string(body)))
			return false, nil
		}
		return true, json.Unmarshal(body, &exp)
	})
	if err != nil {
		t.Fatalf("%s did not explain %s/%s: %v", base, namespace, name, err)
	}
	return exp
}

// kubelet runs the pod's containers with podman as a kubelet would: their
// volumes made from the applied objects, their service account's token
// where in-cluster clients read it, the API server as the in-cluster
// service address.
type kubelet struct {
	t          *testing.T
	cp         *framework.ControlPlane
	objs       map[string]*unstructured.Unstructured
	dir        string
	pod        corev1.PodSpec
	containers []string
}

// tokenPath is where in-cluster clients read a service account's token,
// CA and namespace.
const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// run starts container c from image, with extraArgs after the container's,
// and returns the podman container's name: on the host's network, where
// pods of one template would share a port, the caller gives each its own.
func (k *kubelet) run(c corev1.Container, image string, extraArgs ...string) string {
	t := k.t
	name := fmt.Sprintf("schedscope-test-%s-%d", c.Name, time.Now().UnixNano())
	host := strings.TrimPrefix(k.cp.Config.Host, "https://")
	apiHost, apiPort, _ := strings.Cut(host, ":")
	args := []string{"run", "--detach", "--name", name, "--network=host",
		"--cap-drop=ALL", "--security-opt=no-new-privileges",
		"--env", "KUBERNETES_SERVICE_HOST=" + apiHost, "--env", "KUBERNETES_SERVICE_PORT=" + apiPort}
	env := k.env(c)
	for _, e := range c.Env {
		args = append(args, "--env", e.Name+"="+env[e.Name])
	}
	if sc := c.SecurityContext; sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		args = append(args, "--read-only")
	}
	for _, m := range c.VolumeMounts {
		dir := k.volume(c.Name, m.Name)
		opt := dir + ":" + m.MountPath
		if m.ReadOnly {
			opt += ":ro"
		}
		args = append(args, "--volume", opt)
	}
	// A pod that automounts gets its service account's token, as the
	// ServiceAccount admission plugin and the kubelet give it.
	if a := k.pod.AutomountServiceAccountToken; a == nil || *a {
		args = append(args, "--volume", k.files(c.Name, "kube-api-access", k.credentials(k.pod.ServiceAccountName))+":"+tokenPath+":ro")
	}
	// The container's command replaces the image's entrypoint.
	if len(c.Command) > 0 {
		entrypoint, err := json.Marshal(c.Command)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--entrypoint", string(entrypoint))
	}
	args = append(args, image)
	// The kubelet expands $(VAR) of the container's env in its args.
	for _, a := range slices.Concat(c.Args, extraArgs) {
		args = append(args, expansion.Expand(a, expansion.MappingFuncFor(env)))
	}
	if _, err := podman(args...); err != nil {
		t.Fatal(err)
	}
	k.containers = append(k.containers, name)
	t.Cleanup(func() {
		if t.Failed() {
			k.logs()
		}
		_, _ = podman("rm", "--force", name)
	})
	t.Logf("podman run %s %s", image, strings.Join(slices.Concat(c.Command, c.Args, extraArgs), " "))
	return name
}

// env resolves the container's env as the kubelet does: values (with
// $(VAR) of those before), Secrets' keys read from the API server, and
// the pod's fields.
func (k *kubelet) env(c corev1.Container) map[string]string {
	t := k.t
	env := map[string]string{}
	for _, e := range c.Env {
		switch from := e.ValueFrom; {
		case from == nil:
			env[e.Name] = expansion.Expand(e.Value, expansion.MappingFuncFor(env))
		case from.SecretKeyRef != nil:
			s, err := k.cp.Client.CoreV1().Secrets(namespace).Get(context.Background(), from.SecretKeyRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("container %s: env %s: %v", c.Name, e.Name, err)
			}
			v, ok := s.Data[from.SecretKeyRef.Key]
			if !ok {
				t.Fatalf("container %s: env %s: Secret %s has no key %s", c.Name, e.Name, from.SecretKeyRef.Name, from.SecretKeyRef.Key)
			}
			env[e.Name] = string(v)
		case from.FieldRef != nil:
			env[e.Name] = map[string]string{"metadata.name": "image-pod", "metadata.namespace": namespace, "spec.nodeName": "image-host"}[from.FieldRef.FieldPath]
		default:
			t.Fatalf("container %s: env %s: a source the test cannot resolve", c.Name, e.Name)
		}
	}
	return env
}

// logs logs every container's output.
func (k *kubelet) logs() {
	for _, name := range k.containers {
		out, _ := exec.Command("podman", "logs", "--tail", "40", name).CombinedOutput()
		k.t.Logf("podman logs %s:\n%s", name, out)
	}
}

// volume makes the pod's volume name for container on the host and
// returns its directory.
func (k *kubelet) volume(container, name string) string {
	t := k.t
	dir := filepath.Join(k.dir, container, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var v *corev1.Volume
	for i := range k.pod.Volumes {
		if k.pod.Volumes[i].Name == name {
			v = &k.pod.Volumes[i]
		}
	}
	if v == nil {
		t.Fatalf("container %s mounts volume %s, which the pod does not have", container, name)
	}
	files := map[string]string{}
	switch {
	case v.EmptyDir != nil, v.PersistentVolumeClaim != nil:
		// Writable by the images' user.
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
	case v.ConfigMap != nil:
		cm := k.objs["ConfigMap/"+v.ConfigMap.Name]
		if cm == nil {
			t.Fatalf("volume %s: the chart renders no ConfigMap %s", name, v.ConfigMap.Name)
		}
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		files = data
	case v.Secret != nil && v.Secret.SecretName == "schedscope-sidecar-tls":
		s := k.objs["Secret/"+v.Secret.SecretName]
		if s == nil {
			t.Fatalf("volume %s: the chart renders no Secret %s", name, v.Secret.SecretName)
		}
		data, _, _ := unstructured.NestedStringMap(s.Object, "data")
		for key, b64 := range data {
			b, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				t.Fatal(err)
			}
			files[key] = string(b)
		}
	case v.Secret != nil && k.objs["Secret/"+v.Secret.SecretName] == nil:
		// An existing Secret the values name.
		s, err := k.cp.Client.CoreV1().Secrets(namespace).Get(context.Background(), v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("volume %s: %v", name, err)
		}
		for _, item := range v.Secret.Items {
			files[item.Path] = string(s.Data[item.Key])
		}
	case v.Secret != nil:
		// A service account token Secret, which the token controller fills.
		s := k.objs["Secret/"+v.Secret.SecretName]
		if s == nil || s.GetAnnotations()[corev1.ServiceAccountNameKey] == "" {
			t.Fatalf("volume %s: Secret %s is not a service account token the chart renders", name, v.Secret.SecretName)
		}
		files = k.credentials(s.GetAnnotations()[corev1.ServiceAccountNameKey])
	case v.Projected != nil:
		// The pod's service account token, as the kubelet projects it.
		files = k.credentials(k.pod.ServiceAccountName)
	default:
		t.Fatalf("volume %s: a kind of volume the test cannot make", name)
	}
	return k.files(container, name, files)
}

// files writes files into the directory of container's volume name and
// returns the directory.
func (k *kubelet) files(container, name string, files map[string]string) string {
	dir := filepath.Join(k.dir, container, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		k.t.Fatal(err)
	}
	for file, content := range files {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			k.t.Fatal(err)
		}
	}
	return dir
}

// credentials returns what a service account's token volume holds: a
// token of it, the API server's CA and the namespace.
func (k *kubelet) credentials(serviceAccount string) map[string]string {
	t := k.t
	tr, err := k.cp.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of %s/%s: %v", namespace, serviceAccount, err)
	}
	ca, err := os.ReadFile(filepath.Join(k.cp.Dir, "apiserver-certs", "apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"token": tr.Status.Token, "ca.crt": string(ca), "namespace": namespace}
}

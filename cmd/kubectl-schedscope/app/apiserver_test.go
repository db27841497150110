package app

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from this run's output")

// golden compares got with testdata/name.golden, byte for byte, or
// rewrites the file with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

// fakePod is a pod of the fake kube-apiserver.
func fakePod(namespace, name, uid, schedulerName string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid), Labels: lbls},
		Spec:       corev1.PodSpec{SchedulerName: schedulerName},
	}
}

// apiserverObjects are the fake kube-apiserver's objects: in shop, the
// deployment shop (app=shop) of the fixture's pods web and db and of the
// pod fresh, which no record is of, and the job train of nothing
// recorded; in batch, the pod job (tier=batch).
func apiserverObjects() []runtime.Object {
	shop := map[string]string{"app": "shop"}
	return []runtime.Object{
		fakePod("shop", "web", "uid-web", "schedscope", shop),
		fakePod("shop", "db", "uid-db", "schedscope", shop),
		fakePod("shop", "fresh", "uid-fresh", "default-scheduler", shop),
		fakePod("batch", "job", "uid-job", "schedscope", map[string]string{"tier": "batch"}),
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop"},
			Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: shop}}},
		&batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "train"},
			Spec:       batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"job-name": "train"}}}},
		&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "front"}},
	}
}

// discovery is the fake kube-apiserver's discovery: group version, then
// resource, kind and short names.
var discovery = map[string][]metav1.APIResource{
	"v1": {
		{Name: "pods", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"}, Verbs: []string{"get", "list"}},
		{Name: "services", Namespaced: true, Kind: "Service", ShortNames: []string{"svc"}, Verbs: []string{"get", "list"}},
	},
	"apps/v1": {
		{Name: "deployments", Namespaced: true, Kind: "Deployment", ShortNames: []string{"deploy"}, Verbs: []string{"get", "list"}},
		{Name: "statefulsets", Namespaced: true, Kind: "StatefulSet", ShortNames: []string{"sts"}, Verbs: []string{"get", "list"}},
	},
	"batch/v1": {{Name: "jobs", Namespaced: true, Kind: "Job", Verbs: []string{"get", "list"}}},
}

// fakeAPIServer serves apiserverObjects and discovery as a kube-apiserver
// does, to any caller: get, and list pods by label selector.
func fakeAPIServer(t *testing.T) string {
	t.Helper()
	objects := map[string]runtime.Object{}
	var pods []*corev1.Pod
	for _, obj := range apiserverObjects() {
		gvk := obj.GetObjectKind().GroupVersionKind()
		m := obj.(metav1.Object)
		objects[objectPath(gvk.GroupVersion().String(), strings.ToLower(gvk.Kind)+"s", m.GetNamespace(), m.GetName())] = obj
		if p, ok := obj.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	write := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		switch {
		case path == "/api":
			write(w, http.StatusOK, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
			return
		case path == "/apis":
			list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
			for _, g := range []string{"apps", "batch"} {
				gv := metav1.GroupVersionForDiscovery{GroupVersion: g + "/v1", Version: "v1"}
				list.Groups = append(list.Groups, metav1.APIGroup{Name: g, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
			}
			write(w, http.StatusOK, list)
			return
		}
		gv := strings.TrimPrefix(strings.TrimPrefix(path, "/api/"), "/apis/")
		if resources, ok := discovery[gv]; ok {
			write(w, http.StatusOK, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv, APIResources: resources})
			return
		}
		if obj, ok := objects[path]; ok {
			write(w, http.StatusOK, obj)
			return
		}
		if strings.HasSuffix(path, "/pods") {
			sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
			if err != nil {
				t.Errorf("%s: %v", r.URL, err)
			}
			list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
			for _, p := range pods {
				if sel.Matches(labels.Set(p.Labels)) && (path == "/api/v1/pods" || path == objectPath("v1", "pods", p.Namespace, "")) {
					list.Items = append(list.Items, *p)
				}
			}
			write(w, http.StatusOK, list)
			return
		}
		write(w, http.StatusNotFound, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: path + " not found"})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// objectPath is the path of an object, or with an empty name of its
// namespace's collection.
func objectPath(groupVersion, resource, namespace, name string) string {
	root := "/apis/" + groupVersion
	if groupVersion == "v1" {
		root = "/api/v1"
	}
	path := root + "/namespaces/" + namespace + "/" + resource
	if name != "" {
		path += "/" + name
	}
	return path
}

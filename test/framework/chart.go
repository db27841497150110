package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// ChartDir is the Helm chart that deploys schedscope.
func ChartDir() string { return filepath.Join(RepoRoot(), "charts", "schedscope") }

// RenderChart renders the chart with `helm template` (bin/helm, built by
// `make build-tools`) as release schedscope in namespace, with the values
// files and then the --set values given: the objects `helm install`
// applies, without the test hooks that only `helm test` runs.
func RenderChart(namespace string, valuesFiles []string, set ...string) ([]byte, error) {
	return render([]string{"template", "schedscope", ChartDir(), "--namespace", namespace, "--skip-tests"}, valuesFiles, set)
}

// RenderRelease renders the chart as the release named release in
// namespace, test hooks included.
func RenderRelease(release, namespace string, valuesFiles []string, set ...string) ([]byte, error) {
	return render([]string{"template", release, ChartDir(), "--namespace", namespace}, valuesFiles, set)
}

// render runs helm with args, then the values files and --set values.
func render(args, valuesFiles, set []string) ([]byte, error) {
	helm, err := Binary("helm")
	if err != nil {
		return nil, err
	}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %v: %w: %s", args, err, stderr.Bytes())
	}
	return out, nil
}

// DecodeYAML splits a multi-document YAML stream into objects (numbers as
// int64, as the apiserver returns them), skipping empty documents.
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML: %w", err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding YAML: %w", err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("decoding object: %w\n%s", err, doc)
		}
		objs = append(objs, u)
	}
}

// Applier applies objects to the control plane with server-side apply.
type Applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	// FieldManager names the applier in managedFields.
	FieldManager string
}

// NewApplier returns an Applier for the control plane.
func (cp *ControlPlane) NewApplier(fieldManager string) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	return &Applier{
		dyn:          dyn,
		mapper:       restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cp.Client.Discovery())),
		FieldManager: fieldManager,
	}, nil
}

// Resource maps an object to its REST resource, waiting up to 10 s for a
// kind that a CRD has just added.
func (a *Applier) Resource(ctx context.Context, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	var m *meta.RESTMapping
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		if m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			a.mapper.Reset()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: no such kind in the cluster", gvk, obj.GetName())
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource), nil
	}
	if obj.GetNamespace() == "" {
		return nil, fmt.Errorf("%s %s is namespaced but names no namespace", gvk.Kind, obj.GetName())
	}
	return a.dyn.Resource(m.Resource).Namespace(obj.GetNamespace()), nil
}

// Apply applies obj with server-side apply and strict field validation, so
// that an unknown or misspelt field is an error, and returns the object as
// stored.
func (a *Applier) Apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	r, err := a.Resource(ctx, obj)
	if err != nil {
		return nil, err
	}
	got, err := r.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: a.FieldManager, Force: new(true), FieldValidation: metav1.FieldValidationStrict})
	if err != nil {
		return nil, fmt.Errorf("applying %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return got, nil
}

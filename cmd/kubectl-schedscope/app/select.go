package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/client"
)

// addSelectorFlag adds -l/--selector to a command that lists pods.
func (o *Options) addSelectorFlag(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "Only the pods matching this label selector (e.g. -l app=web,tier!=cache), as kubectl get pods -l lists them with your credentials.")
}

// addSortByFlag adds --sort-by to a command whose answer is a list;
// example is a path over its items.
func (o *Options) addSortByFlag(cmd *cobra.Command, example string) {
	cmd.Flags().StringVar(&o.SortBy, "sort-by", "", fmt.Sprintf("Sort the answer's items by this JSONPath over each item, as kubectl get --sort-by does (e.g. '%s'); the tables and -o print them in that order.", example))
}

// validateSelection checks -l and --sort-by.
func (o *Options) validateSelection() error {
	if o.Selector != "" {
		if _, err := labels.Parse(o.Selector); err != nil {
			return usageErrorf("--selector %q: %v", o.Selector, err)
		}
	}
	if o.SortBy != "" {
		if _, err := sortParser(o.SortBy); err != nil {
			return usageErrorf("--sort-by %q: %v", o.SortBy, err)
		}
	}
	return nil
}

// sortParser parses a --sort-by JSONPath as kubectl does: {.a.b}, .a.b or a.b.
func sortParser(sortBy string) (*jsonpath.JSONPath, error) {
	field, err := get.RelaxedJSONPathExpression(sortBy)
	if err != nil {
		return nil, err
	}
	p := jsonpath.New("sort-by").AllowMissingKeys(true)
	if err := p.Parse(field); err != nil {
		return nil, err
	}
	return p, nil
}

// sortItems sorts items by --sort-by over each item's JSON, with kubectl's
// sorter; a path that selects nothing in any item, or selects a list or an
// object, is a usage error.
func (o *Options) sortItems(items any) error {
	if o.SortBy == "" {
		return nil
	}
	v := reflect.ValueOf(items)
	if v.Len() == 0 {
		return nil
	}
	parser, err := sortParser(o.SortBy)
	if err != nil {
		return usageErrorf("--sort-by %q: %v", o.SortBy, err)
	}
	objs := make([]runtime.Object, v.Len())
	for i := range objs {
		b, err := json.Marshal(v.Index(i).Interface())
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(b, &u.Object); err != nil {
			return err
		}
		results, err := parser.FindResults(u.Object)
		if err != nil {
			return usageErrorf("--sort-by %q: %v", o.SortBy, err)
		}
		for _, r := range results {
			for _, val := range r {
				for val.Kind() == reflect.Interface || val.Kind() == reflect.Pointer {
					val = val.Elem()
				}
				if k := val.Kind(); k == reflect.Map || k == reflect.Slice {
					return usageErrorf("--sort-by %q selects a list or an object, not a value to sort by", o.SortBy)
				}
			}
		}
		objs[i] = u
	}
	sorter, err := get.SortObjects(unstructured.UnstructuredJSONScheme, objs, o.SortBy)
	if err != nil {
		return usageErrorf("--sort-by %q: %v", o.SortBy, err)
	}
	sorted := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
	for i := range v.Len() {
		sorted.Index(i).Set(v.Index(sorter.OriginalPosition(i)))
	}
	reflect.Copy(v, sorted)
	return nil
}

// kubeClient is a client of the kube-apiserver with the kubeconfig's
// credentials, for the pods and workloads the user names.
func (o *Options) kubeClient() (kubernetes.Interface, error) {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}

// podUIDs returns the UIDs of pods.
func podUIDs(pods []corev1.Pod) map[string]bool {
	uids := map[string]bool{}
	for _, p := range pods {
		uids[string(p.UID)] = true
	}
	return uids
}

// selectPods lists the pods matching selector in namespace ns (every
// namespace when ns is empty) with the user's credentials, as kubectl get
// pods -l does.
func (o *Options) selectPods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	cs, err := o.kubeClient()
	if err != nil {
		return nil, err
	}
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of selector %q: %w", selector, err)
	}
	return list.Items, nil
}

// podRequests bounds the requests in flight for the attempts of several
// pods, below the API's bound of requests in flight per user.
const podRequests = 2

// podAttempts returns, for each pod, its newest recorded attempts, at
// most limit, newest first; nil for a pod with none recorded.
func (o *Options) podAttempts(ctx context.Context, c client.Client, pods []corev1.Pod, limit int) ([][]v1alpha1.AttemptSummary, error) {
	out := make([][]v1alpha1.AttemptSummary, len(pods))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(podRequests)
	for i, p := range pods {
		g.Go(func() error {
			body, err := c.Get(ctx, v1alpha1.Prefix+"pods/"+url.PathEscape(string(p.UID))+"/attempts", o.withCluster(url.Values{v1alpha1.ParamLimit: {strconv.Itoa(limit)}}))
			var ae *client.Error
			if errors.As(err, &ae) && ae.Code == http.StatusNotFound {
				return nil
			}
			if err != nil {
				return notFoundOr(err)
			}
			var list v1alpha1.AttemptList
			if err := json.Unmarshal(body, &list); err != nil {
				return fmt.Errorf("decoding the attempts of pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			out[i] = list.Items
			return nil
		})
	}
	return out, g.Wait()
}

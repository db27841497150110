package framework

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// The Service the sidecar's APIService names, as the chart names it for
// release schedscope in namespace schedscope; the sidecar's serving
// certificate covers its host names (sidecarHosts).
const (
	apiServiceNamespace = "schedscope"
	apiServiceService   = "schedscope-sidecar"
)

// sidecarHosts are the host names the sidecar's serving certificate
// covers: the Service's, under which the kube-apiserver verifies it, and
// localhost.
var sidecarHosts = []string{
	apiServiceService + "." + apiServiceNamespace + ".svc",
	apiServiceService + "." + apiServiceNamespace,
	"localhost",
}

// APIServiceName is the name of the sidecar's APIService.
const APIServiceName = v1alpha1.Version + "." + v1alpha1.GroupName

// RegisterAPIService makes the kube-apiserver serve the sidecar's API group
// by proxying to s, as the chart's APIService does: the Service
// schedscope-sidecar in namespace schedscope, of type ExternalName naming
// localhost (there is no cluster network), and the APIService, which
// verifies the sidecar's certificate with its CA bundle. It waits until
// the aggregator reports the APIService available and returns a function
// that deletes the APIService.
func (cp *ControlPlane) RegisterAPIService(ctx context.Context, s *Sidecar) (unregister func() error, err error) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseInt(u.Port(), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("the sidecar's port in %s: %w", s.URL, err)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apiServiceNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	// The aggregator reaches an ExternalName Service at the name and the
	// APIService's port: the sidecar's own.
	if _, err := cp.Client.CoreV1().Services(apiServiceNamespace).Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: apiServiceService},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "localhost"},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	client, err := aggregator.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	apiServices := client.ApiregistrationV1().APIServices()
	if _, err := apiServices.Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: APIServiceName},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: v1alpha1.GroupName, Version: v1alpha1.Version,
			Service:              &apiregistrationv1.ServiceReference{Namespace: apiServiceNamespace, Name: apiServiceService, Port: ptr.To(int32(port))},
			CABundle:             s.CABundle,
			GroupPriorityMinimum: 100, VersionPriority: 100,
		},
	}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	unregister = func() error {
		return apiServices.Delete(context.Background(), APIServiceName, metav1.DeleteOptions{})
	}
	var last apiregistrationv1.APIServiceStatus
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := apiServices.Get(ctx, APIServiceName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = got.Status
		for _, c := range last.Conditions {
			if c.Type == apiregistrationv1.Available {
				return c.Status == apiregistrationv1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		_ = unregister()
		return nil, fmt.Errorf("APIService %s never became available: %w; status %+v", APIServiceName, err, last)
	}
	return unregister, nil
}

package api

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// groupVersion is the API's version as discovery documents name it.
var groupVersion = metav1.GroupVersionForDiscovery{GroupVersion: v1alpha1.GroupName + "/" + v1alpha1.Version, Version: v1alpha1.Version}

// apiGroup describes the API's group.
var apiGroup = metav1.APIGroup{
	TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
	Name:             v1alpha1.GroupName,
	Versions:         []metav1.GroupVersionForDiscovery{groupVersion},
	PreferredVersion: groupVersion,
}

// RegisterDiscovery serves the discovery documents of the API group on mux:
// /apis, /apis/schedscope.io and /apis/schedscope.io/v1alpha1. The
// kube-apiserver's aggregator reads the last to decide that the APIService
// is available. They hold no data and need no credentials. The version
// lists no resources: the API's paths are not Kubernetes objects, and
// listing none keeps them out of kubectl's resource mapping and of the
// controllers that walk every discovered resource.
func RegisterDiscovery(mux *http.ServeMux) {
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups:   []metav1.APIGroup{apiGroup},
		})
	})
	mux.HandleFunc("GET /apis/"+v1alpha1.GroupName, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, apiGroup)
	})
	mux.HandleFunc("GET /apis/"+v1alpha1.GroupName+"/"+v1alpha1.Version, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: groupVersion.GroupVersion,
			APIResources: []metav1.APIResource{},
		})
	})
}

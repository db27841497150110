package app

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// completionLimit bounds the pods a completion asks for.
const completionLimit = 500

// completePods completes the first argument with pod/NAME of the pods the
// sidecar has records of in the namespace; kubectl runs it through
// kubectl_complete-schedscope.
func (o *Options) completePods(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	c, err := o.newClient()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	body, err := c.Get(cmd.Context(), v1alpha1.Prefix+"namespaces/"+url.PathEscape(ns)+"/pods", url.Values{v1alpha1.ParamLimit: {strconv.Itoa(completionLimit)}})
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var list v1alpha1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, p := range list.Items {
		if name := "pod/" + p.Pod.Name; strings.HasPrefix(name, toComplete) {
			names = append(names, name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// fixedCompletion completes a flag with values.
func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

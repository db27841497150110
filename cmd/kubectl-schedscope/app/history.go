package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/client"
)

type historyOptions struct {
	*Options
	pod   string
	limit int
}

func newHistoryCommand(o *Options) *cobra.Command {
	h := &historyOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "history (pod/NAME | -l SELECTOR) [-n NAMESPACE]",
		Short: "List every recorded scheduling attempt of a pod, oldest first",
		Long: `List the recorded scheduling attempts of a pod, oldest first: each with its
outcome, node, the plugins that rejected nodes and when it finished.
Repeats of an unschedulable outcome are folded into one row (ATTEMPT 3-9).

With -l, those of every pod of the namespace the label selector matches
(listed with your credentials), a POD column first, pod after pod;
--sort-by orders the rows by a JSONPath over each attempt.`,
		Example: `  kubectl schedscope history pod/web-0 -n shop
  kubectl schedscope history -l app=web -n shop --sort-by '{.finished}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			switch {
			case h.Selector != "" && len(args) > 0:
				return usageErrorf("history takes pod/NAME or -l SELECTOR, not both")
			case h.Selector == "" && len(args) != 1:
				return usageErrorf("history takes one argument, pod/NAME; got %d", len(args))
			case h.Selector == "":
				if h.pod, err = parsePodArg(args[0]); err != nil {
					return err
				}
			}
			if h.limit < 1 || h.limit > v1alpha1.MaxLimit {
				return usageErrorf("--limit %d: want 1 to %d", h.limit, v1alpha1.MaxLimit)
			}
			if err := h.Validate(); err != nil {
				return err
			}
			return h.run(cmd.Context())
		},
	}
	cmd.Flags().IntVar(&h.limit, "limit", 100, "At most this many (the newest) attempts of each pod.")
	o.addSelectorFlag(cmd)
	o.addSortByFlag(cmd, "{.finished}")
	cmd.ValidArgsFunction = o.completePods
	return cmd
}

func (h *historyOptions) run(ctx context.Context) error {
	ns, err := h.namespace()
	if err != nil {
		return err
	}
	c, err := h.newClient()
	if err != nil {
		return err
	}
	var list v1alpha1.AttemptList
	if h.Selector != "" {
		if list.Items, err = h.selectedHistory(ctx, c, ns); err != nil {
			return err
		}
	} else {
		path := fmt.Sprintf(v1alpha1.Prefix+"namespaces/%s/pods/%s/attempts", url.PathEscape(ns), url.PathEscape(h.pod))
		body, err := c.Get(ctx, path, h.withCluster(url.Values{v1alpha1.ParamLimit: {strconv.Itoa(h.limit)}}))
		if err != nil {
			return notFoundOr(err)
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return fmt.Errorf("decoding the attempts: %w", err)
		}
		// The API answers newest first.
		slices.Reverse(list.Items)
	}
	if err := h.sortItems(list.Items); err != nil {
		return err
	}
	return h.print(&list, func(w io.Writer) { PrintHistory(w, list.Items, !h.NoHeaders) })
}

// selectedHistory returns the attempts of the pods -l selects in ns, pod
// after pod in name order, each pod's oldest first; not found if none has
// an attempt recorded.
func (h *historyOptions) selectedHistory(ctx context.Context, c client.Client, ns string) ([]v1alpha1.AttemptSummary, error) {
	pods, err := h.selectPods(ctx, ns, h.Selector)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	attempts, err := h.podAttempts(ctx, c, pods, h.limit)
	if err != nil {
		return nil, err
	}
	var items []v1alpha1.AttemptSummary
	for _, as := range attempts {
		slices.Reverse(as)
		items = append(items, as...)
	}
	if len(items) == 0 {
		return nil, &ExitError{Code: ExitNotFound, Err: fmt.Errorf("no attempts recorded for the %d pods of selector %q in namespace %s", len(pods), h.Selector, ns)}
	}
	return items, nil
}

// PrintHistory prints attempts as a table, in the order given; a POD
// column first when they are of more than one pod, and a CLUSTER column
// before it when they are of more than one cluster (pods of one name in
// several clusters); with its header row if headers.
func PrintHistory(w io.Writer, attempts []v1alpha1.AttemptSummary, headers bool) {
	t := newTable("ATTEMPT", "RESULT", "NODE", "REJECTED BY", "FINISHED", "MESSAGE")
	var clusters, pods []string
	for _, a := range attempts {
		clusters = append(clusters, clusterName(a.Cluster))
		pods = append(pods, a.Pod.Name)
		number, finished := strconv.Itoa(a.Attempt), a.Finished
		if a.Repeats > 0 {
			number = fmt.Sprintf("%d-%d", a.Attempt, a.LastAttempt)
			finished = a.LastFinished
		}
		var reasons []string
		for _, r := range a.Reasons {
			reasons = append(reasons, fmt.Sprintf("%s(%d)", r.Plugin, r.Nodes))
		}
		node, rejected := a.SelectedNode, strings.Join(reasons, ",")
		if node == "" {
			node = "-"
		}
		if rejected == "" {
			rejected = "-"
		}
		t.addRow(number, string(a.Result), node, rejected, finished.UTC().Format(time.RFC3339), a.Message)
	}
	if clusterColumn(attempts, func(a v1alpha1.AttemptSummary) string { return a.Pod.Name }) {
		t.prependColumn("POD", pods)
	}
	if clusterColumn(attempts, func(a v1alpha1.AttemptSummary) string { return a.Cluster }) {
		t.prependColumn("CLUSTER", clusters)
	}
	t.print(w, headers)
}

// isPodArg reports whether arg names a pod: pod/NAME or a bare NAME.
func isPodArg(arg string) bool {
	kind, _, ok := strings.Cut(arg, "/")
	return !ok || kind == "pod" || kind == "pods" || kind == "po"
}

// parsePodArg returns the name of a pod/NAME argument.
func parsePodArg(arg string) (string, error) {
	name := arg
	for _, prefix := range []string{"pod/", "pods/", "po/"} {
		if strings.HasPrefix(name, prefix) {
			name = strings.TrimPrefix(name, prefix)
			break
		}
	}
	if name == "" || strings.Contains(name, "/") {
		return "", usageErrorf("argument %q: want pod/NAME", arg)
	}
	return name, nil
}

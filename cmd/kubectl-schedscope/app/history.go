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

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

type historyOptions struct {
	*Options
	pod   string
	limit int
}

func newHistoryCommand(o *Options) *cobra.Command {
	h := &historyOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "history pod/NAME [-n NAMESPACE]",
		Short: "List every recorded scheduling attempt of a pod, oldest first",
		Long: `List the recorded scheduling attempts of a pod, oldest first: each with its
outcome, node, the plugins that rejected nodes and when it finished.
Repeats of an unschedulable outcome are folded into one row (ATTEMPT 3-9).`,
		Example: `  kubectl schedscope history pod/web-0 -n shop`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if len(args) != 1 {
				return usageErrorf("history takes one argument, pod/NAME; got %d", len(args))
			}
			if h.pod, err = parsePodArg(args[0]); err != nil {
				return err
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
	cmd.Flags().IntVar(&h.limit, "limit", 100, "At most this many (the newest) attempts.")
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
	path := fmt.Sprintf(v1alpha1.Prefix+"namespaces/%s/pods/%s/attempts", url.PathEscape(ns), url.PathEscape(h.pod))
	body, err := c.Get(ctx, path, h.withCluster(url.Values{v1alpha1.ParamLimit: {strconv.Itoa(h.limit)}}))
	if err != nil {
		return notFoundOr(err)
	}
	var list v1alpha1.AttemptList
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("decoding the attempts: %w", err)
	}
	// The API answers newest first.
	slices.Reverse(list.Items)
	return h.print(&list, func(w io.Writer) { PrintHistory(w, list.Items, !h.NoHeaders) })
}

// PrintHistory prints attempts as a table, in the order given; a CLUSTER
// column first when they are of more than one cluster (pods of one name
// in several clusters); with its header row if headers.
func PrintHistory(w io.Writer, attempts []v1alpha1.AttemptSummary, headers bool) {
	t := newTable("ATTEMPT", "RESULT", "NODE", "REJECTED BY", "FINISHED", "MESSAGE")
	var clusters []string
	for _, a := range attempts {
		clusters = append(clusters, clusterName(a.Cluster))
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
	if clusterColumn(attempts, func(a v1alpha1.AttemptSummary) string { return a.Cluster }) {
		t.prependColumn("CLUSTER", clusters)
	}
	t.print(w, headers)
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

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

type topOptions struct {
	*Options
	by            string
	allNamespaces bool
	since         time.Duration
	limit         int
}

func newTopCommand(o *Options) *cobra.Command {
	t := &topOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "top plugins|nodes [-n NAMESPACE | -A] [--since 1h]",
		Short: "Which plugins reject most nodes, and which nodes are rejected most and why",
		Long: `Count the Filter rejections of the attempts recorded in a time window: by
plugin (the attempts it rejected a node in, and the nodes it rejected), or
by node (how often each was rejected, and by which plugins). Listing by
node needs the right to list nodes. --sort-by orders the rows by a
JSONPath over each count (e.g. .key); the counts are of every pod, so
top takes no -l.`,
		Example: `  kubectl schedscope top plugins -A --since 1h
  kubectl schedscope top nodes -n shop --since 24h --limit 20`,
		ValidArgs: []string{"plugins", "nodes"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := t.complete(args); err != nil {
				return err
			}
			return t.run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&t.allNamespaces, "all-namespaces", "A", false, "Count the attempts of every namespace (needs list pods at the cluster scope).")
	cmd.Flags().DurationVar(&t.since, "since", time.Hour, "Count the attempts of this long ago until now.")
	cmd.Flags().IntVar(&t.limit, "limit", 10, "At most this many rows.")
	o.addSortByFlag(cmd, "{.key}")
	return cmd
}

func (t *topOptions) complete(args []string) error {
	if len(args) != 1 {
		return usageErrorf("top takes one argument, plugins or nodes; got %d", len(args))
	}
	switch args[0] {
	case "plugins", "plugin":
		t.by = v1alpha1.ByPlugin
	case "nodes", "node":
		t.by = v1alpha1.ByNode
	default:
		return usageErrorf("top %q: want plugins or nodes", args[0])
	}
	if t.since <= 0 || t.since > v1alpha1.MaxRejectionAge {
		return usageErrorf("--since %s: want more than 0 and at most %s", t.since, v1alpha1.MaxRejectionAge)
	}
	if t.limit < 1 || t.limit > v1alpha1.MaxLimit {
		return usageErrorf("--limit %d: want 1 to %d", t.limit, v1alpha1.MaxLimit)
	}
	return t.Validate()
}

func (t *topOptions) run(ctx context.Context) error {
	c, err := t.newClient()
	if err != nil {
		return err
	}
	path := v1alpha1.Prefix + "rejections"
	if !t.allNamespaces {
		ns, err := t.namespace()
		if err != nil {
			return err
		}
		path = v1alpha1.Prefix + "namespaces/" + url.PathEscape(ns) + "/rejections"
	}
	q := url.Values{v1alpha1.ParamBy: {t.by}, v1alpha1.ParamSince: {t.since.String()}, v1alpha1.ParamLimit: {strconv.Itoa(t.limit)}}
	body, err := c.Get(ctx, path, t.withCluster(q))
	if err != nil {
		return notFoundOr(err)
	}
	var list v1alpha1.RejectionList
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("decoding the rejections: %w", err)
	}
	if err := t.sortItems(list.Items); err != nil {
		return err
	}
	return t.print(&list, func(w io.Writer) { PrintRejections(w, &list, !t.NoHeaders) })
}

// PrintRejections prints rejection counts as a table, most first, with its
// header row if headers.
func PrintRejections(w io.Writer, list *v1alpha1.RejectionList, headers bool) {
	if len(list.Items) == 0 {
		fmt.Fprintf(w, "No rejections since %s.\n", list.Since.Format(time.RFC3339))
		return
	}
	t := newTable("PLUGIN", "ATTEMPTS", "NODES REJECTED")
	if list.By == v1alpha1.ByNode {
		t = newTable("NODE", "ATTEMPTS", "REJECTIONS", "BY PLUGIN")
	}
	for _, it := range list.Items {
		attempts, nodes := strconv.FormatInt(it.Attempts, 10), strconv.FormatInt(it.Nodes, 10)
		if list.By != v1alpha1.ByNode {
			t.addRow(it.Key, attempts, nodes)
			continue
		}
		plugins := make([]string, 0, len(it.Plugins))
		for p := range it.Plugins {
			plugins = append(plugins, p)
		}
		slices.SortFunc(plugins, func(a, b string) int {
			if d := it.Plugins[b] - it.Plugins[a]; d != 0 {
				return int(d)
			}
			return strings.Compare(a, b)
		})
		for i, p := range plugins {
			plugins[i] = fmt.Sprintf("%s(%d)", p, it.Plugins[p])
		}
		t.addRow(it.Key, attempts, nodes, strings.Join(plugins, ","))
	}
	t.print(w, headers)
}

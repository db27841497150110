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
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/client"
)

type pendingOptions struct {
	*Options
	allNamespaces bool
	limit         int
	watch         bool
	now           func() time.Time
	// selected are the UIDs of the pods -l selects; nil without -l.
	selected map[string]bool
}

// watchInterval is how often pending -w asks again.
var watchInterval = 2 * time.Second

func newPendingCommand(o *Options) *cobra.Command {
	p := &pendingOptions{Options: o, now: time.Now}
	cmd := &cobra.Command{
		Use:   "pending [-n NAMESPACE | -A]",
		Short: "List the pods whose latest scheduling attempt did not schedule them",
		Long: `List the pods whose latest scheduling attempt did not schedule them.

-l keeps the pods the label selector matches, as kubectl get pods -l lists
them with your credentials when the command starts; --sort-by orders the
rows by a JSONPath over each pod's item (see -o yaml).`,
		Example: `  kubectl schedscope pending -A
  kubectl schedscope pending -n shop -o yaml
  kubectl schedscope pending -A -w
  kubectl schedscope pending -n shop -l app=web --sort-by '{.latest.finished}'
  kubectl schedscope pending -A -o custom-columns=POD:.pod.name,REJECTED:.latest.reasons[*].plugin`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("pending takes no arguments; got %q", args)
			}
			if p.limit < 1 || p.limit > v1alpha1.MaxLimit {
				return usageErrorf("--limit %d: want 1 to %d", p.limit, v1alpha1.MaxLimit)
			}
			if err := p.Validate(); err != nil {
				return err
			}
			return p.run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&p.allNamespaces, "all-namespaces", "A", false, "List pending pods of every namespace you may list pods in.")
	cmd.Flags().IntVar(&p.limit, "limit", 500, "At most this many pods.")
	o.addSelectorFlag(cmd)
	o.addSortByFlag(cmd, "{.latest.finished}")
	cmd.Flags().BoolVarP(&p.watch, "watch", "w", false, "After the list, print a row whenever a pod's latest attempt changes, and when a pod leaves the list (scheduled or gone), until interrupted.")
	return cmd
}

func (p *pendingOptions) run(ctx context.Context) error {
	c, err := p.newClient()
	if err != nil {
		return err
	}
	if p.watch && !p.tableOutput() {
		return usageErrorf("--watch prints tables only: -o table or wide")
	}
	path, ns := v1alpha1.Prefix+"pending", ""
	if !p.allNamespaces {
		if ns, err = p.namespace(); err != nil {
			return err
		}
		path = v1alpha1.Prefix + "namespaces/" + url.PathEscape(ns) + "/pending"
	}
	if p.Selector != "" {
		pods, err := p.selectPods(ctx, ns, p.Selector)
		if err != nil {
			return err
		}
		p.selected = podUIDs(pods)
	}
	list, err := p.list(ctx, c, path)
	if err != nil {
		return err
	}
	if err := p.sortItems(list.Items); err != nil {
		return err
	}
	if err := p.print(list, func(w io.Writer) { PrintPending(w, list.Items, p.now(), !p.NoHeaders) }); err != nil || !p.watch {
		return err
	}
	return p.watchList(ctx, c, path, list)
}

// list asks for the pending pods; with -l, for as many as the API gives,
// of which it keeps the selected ones, at most --limit.
func (p *pendingOptions) list(ctx context.Context, c client.Client, path string) (*v1alpha1.PodList, error) {
	limit := p.limit
	if p.selected != nil {
		limit = v1alpha1.MaxLimit
	}
	body, err := c.Get(ctx, path, p.withCluster(url.Values{v1alpha1.ParamLimit: {strconv.Itoa(limit)}}))
	if err != nil {
		return nil, notFoundOr(err)
	}
	var list v1alpha1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding the pending pods: %w", err)
	}
	if p.selected != nil {
		list.Items = slices.DeleteFunc(list.Items, func(s v1alpha1.PodStatus) bool { return !p.selected[s.Pod.UID] })
		list.Items = list.Items[:min(len(list.Items), p.limit)]
	}
	return &list, nil
}

// watchList asks for the list every watchInterval and prints a row for
// each pod whose latest attempt changed, and for each that left the list;
// once a list has held pods of more than one cluster, each row and line
// names its pod's cluster.
func (p *pendingOptions) watchList(ctx context.Context, c client.Client, path string, list *v1alpha1.PodList) error {
	key := func(s v1alpha1.PodStatus) string { return s.Cluster + "/" + s.Pod.UID }
	clusters := clusterColumn(list.Items, podCluster)
	seen := map[string]v1alpha1.PodStatus{}
	for _, s := range list.Items {
		seen[key(s)] = s
	}
	ticker := time.NewTicker(watchInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		next, err := p.list(ctx, c, path)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		clusters = clusters || clusterColumn(next.Items, podCluster)
		now, current := p.now(), map[string]v1alpha1.PodStatus{}
		var changed []v1alpha1.PodStatus
		for _, s := range next.Items {
			current[key(s)] = s
			if old, ok := seen[key(s)]; !ok || old.Latest.Seq != s.Latest.Seq || old.Latest.LastAttempt != s.Latest.LastAttempt {
				changed = append(changed, s)
			}
		}
		for k, s := range seen {
			if _, ok := current[k]; !ok {
				of := ""
				if clusters {
					of = " of cluster " + clusterName(s.Cluster)
				}
				fmt.Fprintf(p.Out, "%s/%s%s left the pending list (scheduled or gone)\n", s.Pod.Namespace, s.Pod.Name, of)
			}
		}
		if len(changed) > 0 {
			printPending(p.Out, changed, now, false, clusters)
		}
		seen = current
	}
}

// PrintPending prints pending pods as a table, with its header row if
// headers; a CLUSTER column first when they are of more than one cluster.
func PrintPending(w io.Writer, pods []v1alpha1.PodStatus, now time.Time, headers bool) {
	if len(pods) == 0 {
		fmt.Fprintln(w, "No pending pods.")
		return
	}
	printPending(w, pods, now, headers, clusterColumn(pods, podCluster))
}

// podCluster is a pending pod's cluster.
func podCluster(s v1alpha1.PodStatus) string { return s.Cluster }

// printPending prints pods as PrintPending does, with a CLUSTER column if
// clusters.
func printPending(w io.Writer, pods []v1alpha1.PodStatus, now time.Time, headers, clusters bool) {
	t := newTable("NAMESPACE", "NAME", "PROFILE", "ATTEMPTS", "RESULT", "PENDING FOR", "REJECTED BY", "MESSAGE")
	var names []string
	for _, p := range pods {
		names = append(names, clusterName(p.Cluster))
		var reasons []string
		for _, r := range p.Latest.Reasons {
			reasons = append(reasons, fmt.Sprintf("%s(%d)", r.Plugin, r.Nodes))
		}
		rejected := strings.Join(reasons, ",")
		if rejected == "" {
			rejected = "-"
		}
		t.addRow(p.Pod.Namespace, p.Pod.Name, p.Profile, strconv.Itoa(max(p.Latest.Attempt, p.Latest.LastAttempt)),
			string(p.Latest.Result), duration.HumanDuration(now.Sub(p.FirstSeen)), rejected, p.Latest.Message)
	}
	if clusters {
		t.prependColumn("CLUSTER", names)
	}
	t.print(w, headers)
}

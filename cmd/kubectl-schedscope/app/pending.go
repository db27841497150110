package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

type pendingOptions struct {
	*Options
	allNamespaces bool
	limit         int
	now           func() time.Time
}

func newPendingCommand(o *Options) *cobra.Command {
	p := &pendingOptions{Options: o, now: time.Now}
	cmd := &cobra.Command{
		Use:   "pending [-n NAMESPACE | -A]",
		Short: "List the pods whose latest scheduling attempt did not schedule them",
		Example: `  kubectl schedscope pending -A
  kubectl schedscope pending -n shop -o yaml`,
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
	return cmd
}

func (p *pendingOptions) run(ctx context.Context) error {
	c, err := p.newClient()
	if err != nil {
		return err
	}
	path := v1alpha1.Prefix + "pending"
	if !p.allNamespaces {
		ns, err := p.namespace()
		if err != nil {
			return err
		}
		path = v1alpha1.Prefix + "namespaces/" + url.PathEscape(ns) + "/pending"
	}
	body, err := c.Get(ctx, path, p.withCluster(url.Values{"limit": {strconv.Itoa(p.limit)}}))
	if err != nil {
		return notFoundOr(err)
	}
	var list v1alpha1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("decoding the pending pods: %w", err)
	}
	return p.print(&list, func(w io.Writer) { PrintPending(w, list.Items, p.now()) })
}

// PrintPending prints pending pods as a table; a CLUSTER column first
// when they are of more than one cluster.
func PrintPending(w io.Writer, pods []v1alpha1.PodStatus, now time.Time) {
	if len(pods) == 0 {
		fmt.Fprintln(w, "No pending pods.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	clusters := clusterColumn(pods, func(p v1alpha1.PodStatus) string { return p.Cluster })
	if clusters {
		fmt.Fprint(tw, "CLUSTER\t")
	}
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tPROFILE\tATTEMPTS\tRESULT\tPENDING FOR\tREJECTED BY\tMESSAGE")
	for _, p := range pods {
		if clusters {
			fmt.Fprintf(tw, "%s\t", clusterName(p.Cluster))
		}
		var reasons []string
		for _, r := range p.Latest.Reasons {
			reasons = append(reasons, fmt.Sprintf("%s(%d)", r.Plugin, r.Nodes))
		}
		rejected := strings.Join(reasons, ",")
		if rejected == "" {
			rejected = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", p.Pod.Namespace, p.Pod.Name, p.Profile, max(p.Latest.Attempt, p.Latest.LastAttempt),
			p.Latest.Result, duration.HumanDuration(now.Sub(p.FirstSeen)), rejected, p.Latest.Message)
	}
	tw.Flush()
}

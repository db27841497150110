package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

type shadowOptions struct {
	*Options
	shadow        string
	allNamespaces bool
	since         string
	until         string
}

func newShadowCommand(o *Options) *cobra.Command {
	s := &shadowOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "shadow --shadow NAME [-n NAMESPACE | -A] [--since 24h] [--until TIME]",
		Short: "How often a shadow profile would have placed pods elsewhere, and why",
		Long: `Count the runs of a shadow profile over the live attempts of a time
window: how many were compared with their live attempt, and of those how
many chose the same node, another node, found a node only under the live
profile or only under the shadow, or neither; the runs not compared, by
reason; and the plugins most often behind a difference (the plugin that
rejected the other profile's node, or the score plugins that favoured the
shadow's own node). Percentages are of the compared runs.

--since and --until take a duration before now (24h) or an RFC 3339 time.
Counting in one namespace needs list pods there, with -A list pods at the
cluster scope, as for top.`,
		Example: `  kubectl schedscope shadow --shadow schedscope-binpack -A
  kubectl schedscope shadow --shadow schedscope-binpack -n shop --since 168h --until 24h
  kubectl schedscope shadow --shadow schedscope-binpack -A -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := s.complete(); err != nil {
				return err
			}
			return s.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&s.shadow, "shadow", "", "The shadow profile (its schedulerName, as --shadow-profile names it); required.")
	cmd.Flags().BoolVarP(&s.allNamespaces, "all-namespaces", "A", false, "Count the runs of every namespace (needs list pods at the cluster scope).")
	cmd.Flags().StringVar(&s.since, "since", "24h", "Count the runs of the attempts since this long ago (a duration) or this RFC 3339 time.")
	cmd.Flags().StringVar(&s.until, "until", "", "Count the runs of the attempts until this long ago (a duration) or this RFC 3339 time; default now.")
	_ = cmd.RegisterFlagCompletionFunc("shadow", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("since", fixedCompletion("1h", "24h", "168h"))
	return cmd
}

func (s *shadowOptions) complete() error {
	if s.shadow == "" {
		return usageErrorf("--shadow is required: the shadow profile to count, as the scheduler's --shadow-profile=SHADOW=LIVE names it")
	}
	if err := checkWindowBound("--since", s.since); err != nil {
		return err
	}
	if err := checkWindowBound("--until", s.until); err != nil {
		return err
	}
	return s.Validate()
}

// checkWindowBound checks a bound of a time window: empty, a duration
// before now of at most the API's oldest, or an RFC 3339 time.
func checkWindowBound(flag, v string) error {
	if v == "" {
		return nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 || d > v1alpha1.MaxRejectionAge {
			return usageErrorf("%s %s: want a duration from 0 to %s", flag, v, v1alpha1.MaxRejectionAge)
		}
		return nil
	}
	if _, err := time.Parse(time.RFC3339, v); err != nil {
		return usageErrorf("%s %q: want a duration before now (24h) or an RFC 3339 time (2026-01-02T03:04:05Z)", flag, v)
	}
	return nil
}

func (s *shadowOptions) run(ctx context.Context) error {
	c, err := s.newClient()
	if err != nil {
		return err
	}
	path := v1alpha1.Prefix + "shadows/" + url.PathEscape(s.shadow)
	if !s.allNamespaces {
		ns, err := s.namespace()
		if err != nil {
			return err
		}
		path = v1alpha1.Prefix + "namespaces/" + url.PathEscape(ns) + "/shadows/" + url.PathEscape(s.shadow)
	}
	q := url.Values{v1alpha1.ParamSince: {s.since}}
	if s.until != "" {
		q.Set(v1alpha1.ParamUntil, s.until)
	}
	body, err := c.Get(ctx, path, s.withCluster(q))
	if err != nil {
		return notFoundOr(err)
	}
	var sum v1alpha1.ShadowSummary
	if err := json.Unmarshal(body, &sum); err != nil {
		return fmt.Errorf("decoding the shadow summary: %w", err)
	}
	return s.print(&sum, func(w io.Writer) { PrintShadowSummary(w, &sum) })
}

// PrintShadowSummary prints a shadow's counts: the window, a table of the
// outcomes with their share of the compared runs, the reasons runs were
// not compared, and the plugins behind the differences.
func PrintShadowSummary(w io.Writer, s *v1alpha1.ShadowSummary) {
	until := "now"
	if !s.Until.IsZero() {
		until = s.Until.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "Shadow:   %s\n", s.Shadow)
	fmt.Fprintf(w, "Window:   %s to %s\n", s.Since.Format(time.RFC3339), until)
	if s.Compared == 0 && s.NotCompared == 0 {
		fmt.Fprintln(w, "No runs of the shadow in the window.")
		return
	}
	fmt.Fprintln(w)
	share := func(n int64) string {
		if s.Compared == 0 {
			return "-"
		}
		return strconv.FormatFloat(100*float64(n)/float64(s.Compared), 'f', 1, 64) + "%"
	}
	outcomes := newTable("OUTCOME", "RUNS", "OF COMPARED")
	outcomes.addRow("compared", strconv.FormatInt(s.Compared, 10), "-")
	for _, o := range []struct {
		name string
		runs int64
	}{
		{"  same node", s.SameNode},
		{"  another node", s.OtherNode},
		{"  only live fits", s.OnlyLiveFits},
		{"  only shadow fits", s.OnlyShadowFits},
		{"  neither fits", s.Neither},
	} {
		outcomes.addRow(o.name, strconv.FormatInt(o.runs, 10), share(o.runs))
	}
	outcomes.addRow("not compared", strconv.FormatInt(s.NotCompared, 10), "-")
	outcomes.print(w, true)
	if len(s.NotComparedReasons) > 0 {
		fmt.Fprintln(w)
		reasons := newTable("NOT COMPARED BECAUSE", "RUNS")
		for _, r := range s.NotComparedReasons {
			reasons.addRow(r.Reason, strconv.FormatInt(r.Count, 10))
		}
		reasons.print(w, true)
	}
	if len(s.TopPlugins) > 0 {
		fmt.Fprintln(w)
		plugins := newTable("BEHIND THE DIFFERENCES", "RUNS", "OF COMPARED")
		for _, p := range s.TopPlugins {
			plugins.addRow(p.Plugin, strconv.FormatInt(p.Count, 10), share(p.Count))
		}
		plugins.print(w, true)
	}
}

package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/client"
)

// pageSize is the rows fetched per request (the API's maximum).
const pageSize = 10000

// defaultNodes is how many feasible nodes explain shows by default.
const defaultNodes = 10

// Row selections of --verdict.
const (
	verdictFeasible     = "feasible"
	verdictRejected     = "rejected"
	verdictNotEvaluated = "not-evaluated"
)

type explainOptions struct {
	*Options
	pod string
	// workload is a TYPE/NAME argument other than a pod's (deploy/web).
	workload string
	node     string
	attempt  int
	// shadow names the shadow profile whose run of the attempt to explain.
	shadow   string
	allNodes bool
	verdict  string
	limit    int
	wait     time.Duration
}

func newExplainCommand(o *Options) *cobra.Command {
	e := &explainOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "explain (pod/NAME | TYPE/NAME | -l SELECTOR) [-n NAMESPACE]",
		Short: "Explain where a pod was (not) scheduled and why",
		Long: `Print the latest scheduling attempt of a pod: the nodes grouped by verdict,
what would make an unschedulable pod fit, and the top feasible nodes (the
chosen node first, then by total score; with no feasible node, the first
rejected ones). --all-nodes prints every node: then
the rejected nodes grouped by the plugin that rejected them, then the nodes
never evaluated; --verdict keeps the nodes of one verdict. -o wide adds
each score plugin's column.

A scheduled pod's Margin line says why the chosen node beat the
runner-up, the scored node with the next highest total: by how much, and
the score plugins whose weighted scores made the difference.

With --node, say why the pod did (not) land on that node.

When the pod's profile has shadow profiles (the scheduler's
--shadow-profile), the Shadows section says what each would have done in
the attempt: the same node, another node (where the live node ranked under
the shadow, and the plugins behind the difference), no node (and whether
preemption would have helped), or why the run was not compared. With
--shadow NAME, explain that shadow's own run of the attempt instead, as
if it were the live one: exit code 0 then means the shadow found a node.

Of a workload (deploy/web, deployment/web, rs/NAME, sts/db,
statefulset/db, ds/NAME, job/train, rc/NAME), or of the pods a label
selector matches (-l app=web), read the pods with your credentials and
print their latest attempts grouped: how many pods had each outcome, the
nodes of the scheduled ones, the plugins that rejected nodes and the
message of the others, and the pods without a recorded attempt with their
spec.schedulerName; -o wide adds the pods' names, -o json and -o yaml
give the latest attempts as items, --sort-by orders them.

When no attempt of a pod is recorded, the error says the pod's
spec.schedulerName (read with your credentials): schedscope records only
the pods of its scheduler's profiles.

Exit codes: 0 the pod is scheduled (of a workload: every pod with a
recorded attempt), 3 it is pending (any pod), 4 no attempt is recorded,
2 usage, 1 other errors.`,
		Example: `  kubectl schedscope explain pod/web-0 -n shop
  kubectl schedscope explain deploy/web -n shop
  kubectl schedscope explain -l app=web -n shop -o wide
  kubectl schedscope explain pod/web-0 -n shop --node node-7
  kubectl schedscope explain pod/web-0 -n shop --shadow schedscope-binpack
  kubectl schedscope explain pod/web-0 -n shop --verdict rejected --limit 50 -o wide
  kubectl schedscope explain pod/web-0 -n shop -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := e.complete(args); err != nil {
				return err
			}
			return e.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&e.node, "node", "", "Explain why the pod did (not) land on this node.")
	cmd.Flags().IntVar(&e.attempt, "attempt", 0, "Explain this attempt (1 is the first); default the latest.")
	cmd.Flags().StringVar(&e.shadow, "shadow", "", "Explain this shadow profile's run of the attempt instead of the attempt.")
	_ = cmd.RegisterFlagCompletionFunc("shadow", cobra.NoFileCompletions)
	cmd.Flags().BoolVar(&e.allNodes, "all-nodes", false, "Print every node, not only the top feasible ones.")
	cmd.Flags().DurationVar(&e.wait, "wait", 0, "Wait up to this long for the pod's first recorded attempt (bound, unschedulable or failed) instead of answering not found.")
	cmd.Flags().StringVar(&e.verdict, "verdict", "", "Print only the nodes of this verdict: feasible, rejected or not-evaluated.")
	_ = cmd.RegisterFlagCompletionFunc("verdict", fixedCompletion(verdictFeasible, verdictRejected, verdictNotEvaluated))
	cmd.ValidArgsFunction = o.completePods
	o.addSelectorFlag(cmd)
	o.addSortByFlag(cmd, "{.pod.name}")
	cmd.Flags().IntVar(&e.limit, "limit", 0, fmt.Sprintf("Print at most this many nodes (default %d feasible nodes; with --all-nodes or --verdict, all).", defaultNodes))
	return cmd
}

func (e *explainOptions) complete(args []string) error {
	switch {
	case e.Selector != "" && len(args) > 0:
		return usageErrorf("explain takes pod/NAME, TYPE/NAME or -l SELECTOR, not both")
	case e.Selector == "" && len(args) != 1:
		return usageErrorf("explain takes one argument, pod/NAME or TYPE/NAME (deploy/web); got %d", len(args))
	case e.Selector != "":
	case isPodArg(args[0]):
		name, err := parsePodArg(args[0])
		if err != nil {
			return err
		}
		e.pod = name
	default:
		kind, name, _ := strings.Cut(args[0], "/")
		if kind == "" || name == "" || strings.Contains(name, "/") {
			return usageErrorf("argument %q: want pod/NAME or TYPE/NAME (deploy/web)", args[0])
		}
		e.workload = args[0]
	}
	if e.pod == "" && (e.node != "" || e.attempt != 0 || e.shadow != "" || e.allNodes || e.verdict != "" || e.limit != 0 || e.wait != 0) {
		return usageErrorf("--node, --attempt, --shadow, --all-nodes, --verdict, --limit and --wait explain one pod: not with %s", cmp.Or(e.workload, "-l"))
	}
	if e.pod != "" && e.SortBy != "" {
		return usageErrorf("--sort-by sorts the pods of a workload or of -l: not with pod/%s", e.pod)
	}
	if e.attempt < 0 {
		return usageErrorf("--attempt %d: must be at least 1", e.attempt)
	}
	switch e.verdict {
	case "", verdictFeasible, verdictRejected, verdictNotEvaluated:
	default:
		return usageErrorf("--verdict %q: want feasible, rejected or not-evaluated", e.verdict)
	}
	if e.limit < 0 {
		return usageErrorf("--limit %d: must be at least 1", e.limit)
	}
	if e.wait < 0 {
		return usageErrorf("--wait %s: must not be negative", e.wait)
	}
	return e.Validate()
}

func notFoundOr(err error) error {
	var ae *client.Error
	if errors.As(err, &ae) {
		switch ae.Code {
		case http.StatusNotFound:
			return &ExitError{Code: ExitNotFound, Err: errors.New(ae.Message)}
		case http.StatusBadRequest:
			return &ExitError{Code: ExitUsage, Err: errors.New(ae.Message)}
		}
	}
	return err
}

func (e *explainOptions) run(ctx context.Context) error {
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	if e.pod == "" {
		return e.runPods(ctx, ns)
	}
	c, err := e.newClient()
	if err != nil {
		return err
	}
	if e.wait > 0 {
		if err := e.waitForAttempt(ctx, c, ns); err != nil {
			return err
		}
	}
	path := fmt.Sprintf(v1alpha1.Prefix+"namespaces/%s/pods/%s/explain", url.PathEscape(ns), url.PathEscape(e.pod))
	q := e.withCluster(url.Values{})
	if e.attempt > 0 {
		q.Set("attempt", strconv.Itoa(e.attempt))
	}
	if e.shadow != "" {
		q.Set(v1alpha1.ParamShadow, e.shadow)
	}
	if e.node != "" {
		q.Set("node", e.node)
		body, err := c.Get(ctx, path, q)
		if err != nil {
			return notFoundOr(err)
		}
		var ans v1alpha1.NodeAnswer
		if err := json.Unmarshal(body, &ans); err != nil {
			return fmt.Errorf("decoding the answer: %w", err)
		}
		if err := e.print(&ans, func(w io.Writer) { fmt.Fprintln(w, ans.Why) }); err != nil {
			return err
		}
		return resultCode(ans.Result)
	}

	var ex *v1alpha1.Explanation
	page := pageSize
	if e.verdict == "" && !e.allNodes && e.tableOutput() {
		// The feasible nodes come first: the top ones are on the first page.
		page = e.rowLimit()
	}
	for offset := 0; ; {
		q.Set("offset", strconv.Itoa(offset))
		q.Set("limit", strconv.Itoa(page))
		body, err := c.Get(ctx, path, q)
		if err != nil {
			return e.notRecorded(ctx, ns, notFoundOr(err))
		}
		var got v1alpha1.Explanation
		if err := json.Unmarshal(body, &got); err != nil {
			return fmt.Errorf("decoding the explanation: %w", err)
		}
		if ex == nil {
			ex = &got
		} else {
			ex.Rows = append(ex.Rows, got.Rows...)
		}
		offset += len(got.Rows)
		if len(got.Rows) == 0 || offset >= got.TotalRows || page < pageSize {
			break
		}
	}
	ex.Offset, ex.Limit = 0, len(ex.Rows)
	if err := e.print(ex, func(w io.Writer) { PrintExplanation(w, e.selectRows(ex), e.Output == OutputWide) }); err != nil {
		return err
	}
	return resultCode(ex.Result)
}

// podReadTimeout bounds reading the pod when explaining a not-found answer.
const podReadTimeout = 5 * time.Second

// notRecorded adds to a not-found answer for the pod what the
// kube-apiserver says of it, read with the user's credentials: its
// spec.schedulerName, since schedscope records only the pods of its
// scheduler's profiles, or that no such pod exists. Other errors, a pod
// the user may not read, and the answers for an attempt, a node or a
// shadow's run are returned as they are.
func (e *explainOptions) notRecorded(ctx context.Context, ns string, err error) error {
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitNotFound || e.attempt != 0 || e.node != "" || e.shadow != "" {
		return err
	}
	cs, cerr := e.kubeClient()
	if cerr != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, podReadTimeout)
	defer cancel()
	pod, gerr := cs.CoreV1().Pods(ns).Get(ctx, e.pod, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(gerr):
		return &ExitError{Code: ExitNotFound, Err: fmt.Errorf("%w, and the cluster has no pod %s/%s", ee.Err, ns, e.pod)}
	case gerr != nil:
		return err
	}
	name := pod.Spec.SchedulerName
	return &ExitError{Code: ExitNotFound, Err: fmt.Errorf("%w: its spec.schedulerName is %q, and schedscope records only the pods whose "+
		"spec.schedulerName is one of its scheduler's profiles (the chart's: schedscope, schedscope-binpack); check that %q is one "+
		"of them, or wait for the pod's first attempt with --wait 30s", ee.Err, name, name)}
}

// waitForAttempt waits up to --wait for the pod's first recorded attempt.
func (e *explainOptions) waitForAttempt(ctx context.Context, c client.Client, ns string) error {
	path := fmt.Sprintf(v1alpha1.Prefix+"namespaces/%s/pods/%s/attempts", url.PathEscape(ns), url.PathEscape(e.pod))
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, e.wait, true, func(ctx context.Context) (bool, error) {
		_, err := c.Get(ctx, path, e.withCluster(url.Values{v1alpha1.ParamLimit: {"1"}}))
		var ae *client.Error
		if errors.As(err, &ae) && ae.Code == http.StatusNotFound {
			return false, nil
		}
		return err == nil, err
	})
	if wait.Interrupted(err) {
		return &ExitError{Code: ExitNotFound, Err: fmt.Errorf("no attempt of pod %s/%s recorded within %s", ns, e.pod, e.wait)}
	}
	return notFoundOr(err)
}

// rowLimit is how many rows to print: --limit, else defaultNodes for the
// default view and every row with --all-nodes or --verdict.
func (e *explainOptions) rowLimit() int {
	switch {
	case e.limit > 0:
		return e.limit
	case e.allNodes || e.verdict != "":
		return 0
	}
	return defaultNodes
}

// selectRows returns ex with the rows the flags select; TotalRows stays
// the number of rows the attempt has.
func (e *explainOptions) selectRows(ex *v1alpha1.Explanation) *v1alpha1.Explanation {
	out := *ex
	out.Rows = nil
	// With no feasible node, the default view shows the first rows whatever
	// their verdict: the rejected nodes, grouped by plugin.
	anyVerdict := e.verdict == "" && !e.allNodes && ex.Nodes.Feasible == 0
	for _, r := range ex.Rows {
		v := r.Verdict
		if v == v1alpha1.VerdictPassed {
			v = verdictFeasible
		}
		switch {
		case e.verdict != "" && v != e.verdict:
			continue
		case e.verdict == "" && !e.allNodes && !anyVerdict && v != verdictFeasible:
			continue
		}
		out.Rows = append(out.Rows, r)
	}
	if n := e.rowLimit(); n > 0 && len(out.Rows) > n {
		out.Rows = out.Rows[:n]
	}
	return &out
}

func resultCode(r v1alpha1.Result) error {
	if r == v1alpha1.ResultScheduled {
		return nil
	}
	return &ExitError{Code: ExitPending}
}

// printGroups prints the nodes grouped by verdict: how many, which plugin,
// which reasons.
func printGroups(w io.Writer, groups []v1alpha1.Group) {
	t := newTable("NODES", "VERDICT", "PLUGIN", "REASONS")
	for _, g := range groups {
		verdict, plugin, reasons := g.Verdict, g.Plugin, strings.Join(g.Reasons, "; ")
		if g.Verdict == v1alpha1.VerdictPassed {
			verdict = "feasible"
		}
		if plugin == "" {
			plugin = "-"
		}
		if reasons == "" {
			reasons = g.NotEvaluatedReason
		}
		if g.HasChosen {
			reasons = "holds the chosen node"
		}
		t.addRow(strconv.Itoa(g.Nodes), verdict, plugin, reasons)
	}
	t.print(w, true)
}

// printHints prints what would make the pod fit, each hint after the
// plugins it answers.
func printHints(w io.Writer, hints []v1alpha1.Hint) {
	if len(hints) == 0 {
		return
	}
	fmt.Fprintln(w, "What would make it fit:")
	for _, h := range hints {
		fmt.Fprintf(w, "  %s: %s\n", strings.Join(h.Plugins, ", "), h.Message)
	}
	fmt.Fprintln(w)
}

// PrintExplanation prints an explanation as a header, a table of the
// verdict groups, the hints, what the shadow profiles would have done and,
// when the caller may see the nodes, a table of e.Rows; wide adds a column
// per score plugin.
func PrintExplanation(w io.Writer, e *v1alpha1.Explanation, wide bool) {
	fmt.Fprintf(w, "Pod:      %s/%s (uid %s)\n", e.Pod.Namespace, e.Pod.Name, e.Pod.UID)
	fmt.Fprintf(w, "Attempt:  %d (profile %s, finished %s)\n", e.Attempt, e.Profile, e.Timing.Finished.Format("2006-01-02T15:04:05Z07:00"))
	fmt.Fprintf(w, "Result:   %s\n", e.Result)
	if e.SelectedNode != "" {
		fmt.Fprintf(w, "Node:     %s\n", e.SelectedNode)
	}
	if e.Margin != nil {
		fmt.Fprintf(w, "Margin:   %s\n", e.Margin)
	}
	if e.Message != "" {
		fmt.Fprintf(w, "Message:  %s (at %s)\n", e.Message, e.FailedPoint)
	}
	if e.NominatedNode != "" {
		fmt.Fprintf(w, "Nominated: %s\n", e.NominatedNode)
	}
	if e.TraceID != "" {
		fmt.Fprintf(w, "Trace:    %s\n", e.TraceID)
	}
	fmt.Fprintf(w, "Nodes:    %d total, %d evaluated, %d feasible\n", e.Nodes.Total, e.Nodes.Evaluated, e.Nodes.Feasible)
	for _, d := range e.Details {
		fmt.Fprintf(w, "Detail:   %s: %s\n", d.Plugin, d.Detail)
	}
	if e.DetailsCut > 0 {
		fmt.Fprintf(w, "Detail:   %d more details not kept\n", e.DetailsCut)
	}
	fmt.Fprintln(w)
	printGroups(w, e.Groups)
	fmt.Fprintln(w)
	printHints(w, e.Hints)
	printShadows(w, e.Shadows)
	if e.NodesHidden {
		fmt.Fprintln(w, "Node names, per-node verdicts and scores are hidden: you may not list nodes.")
		return
	}

	if len(e.Rows) == 0 {
		fmt.Fprintf(w, "No node to show of %d (--all-nodes, --verdict).\n", e.TotalRows)
		return
	}
	scorePlugins := e.ScorePlugins
	if !wide {
		scorePlugins = nil
	}
	header := []string{"NODE", "VERDICT", "PLUGIN", "TOTAL"}
	for _, p := range scorePlugins {
		header = append(header, p.Name)
	}
	t := newTable(append(header, "DETAIL")...)
	for _, r := range e.Rows {
		verdict := r.Verdict
		switch {
		case r.Chosen:
			verdict = "chosen"
		case r.Verdict == v1alpha1.VerdictPassed:
			verdict = "feasible"
		}
		plugin, total, detail := "-", "-", ""
		if r.Plugin != "" {
			plugin = r.Plugin
		}
		if r.Total != nil {
			total = strconv.FormatInt(*r.Total, 10)
		}
		switch {
		case len(r.Reasons) > 0:
			detail = strings.Join(r.Reasons, "; ")
			for _, d := range r.Details {
				detail += fmt.Sprintf(" (%s: %s)", d.Plugin, d.Detail)
			}
		case r.NotEvaluatedReason != "":
			detail = r.NotEvaluatedReason
		case r.Rank > 0:
			detail = fmt.Sprintf("rank %d", r.Rank)
		}
		cols := []string{r.Node, verdict, plugin, total}
		for i := range scorePlugins {
			if i < len(r.Scores) {
				cols = append(cols, strconv.FormatInt(r.Scores[i], 10))
			} else {
				cols = append(cols, "-")
			}
		}
		t.addRow(append(cols, detail)...)
	}
	t.print(w, true)
	if e.TotalRows > len(e.Rows) {
		more := e.TotalRows - len(e.Rows)
		noun := "nodes"
		if more == 1 {
			noun = "node"
		}
		fmt.Fprintf(w, "... %d more %s (--all-nodes, --verdict)\n", more, noun)
	}
}

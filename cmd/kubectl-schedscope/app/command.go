package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/client"
	"github.com/schedscope/schedscope/pkg/version"
)

// Output formats.
const (
	OutputTable = "table"
	OutputWide  = "wide"
	OutputName  = "name"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// Options are the flags shared by every subcommand.
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	// SidecarURL is the sidecar's address; empty means the kube-apiserver,
	// which serves the sidecar's API as an aggregated API.
	SidecarURL string
	Output     string
	// ClusterName keeps one cluster's answers (a sidecar's --cluster-name)
	// when several clusters write one store; empty keeps every cluster's.
	ClusterName string
	// NoHeaders leaves out the tables' header rows.
	NoHeaders bool
	// Selector keeps the pods of this label selector (-l), as the
	// kube-apiserver lists them for the user.
	Selector string
	// SortBy sorts a list's items by this JSONPath (--sort-by).
	SortBy string

	genericiooptions.IOStreams

	// newClient builds the client; tests may replace it.
	newClient func() (client.Client, error)
}

// NewOptions returns the defaults.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	cf := genericclioptions.NewConfigFlags(true)
	o := &Options{ConfigFlags: cf, Output: OutputTable, IOStreams: streams}
	o.newClient = o.client
	return o
}

// AddFlags adds the shared flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.ConfigFlags.AddFlags(fs)
	fs.StringVar(&o.SidecarURL, "sidecar-url", o.SidecarURL, "Address of the sidecar (e.g. https://127.0.0.1:10263); by default the sidecar's API is reached through the kube-apiserver, which serves it as an aggregated API. The kubeconfig's credentials are never sent over plain http except to loopback.")
	fs.StringVar(&o.ClusterName, "cluster-name", o.ClusterName, "Only the pods and attempts of this cluster, as its sidecar's --cluster-name names it, when several clusters write one store. Not kubectl's --cluster, which picks the kubeconfig's cluster to talk to.")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format: table, wide (more columns), or one of kubectl's: name (the pods or nodes of the answer), json, yaml, jsonpath=..., jsonpath-as-json=..., go-template=..., custom-columns=HEADER:.field,... (a row per item of a list), custom-columns-file=....")
	fs.BoolVar(&o.NoHeaders, "no-headers", o.NoHeaders, "Leave out the header rows of the tables of pending, history and top, and of custom-columns.")
}

// Validate checks the shared flags.
func (o *Options) Validate() error {
	if o.ClusterName != "" {
		if errs := validation.IsDNS1123Label(o.ClusterName); len(errs) > 0 {
			return usageErrorf("--cluster-name %q is not a cluster name (a DNS-1123 label): %s", o.ClusterName, strings.Join(errs, "; "))
		}
	}
	if err := o.validateSelection(); err != nil {
		return err
	}
	if o.tableOutput() {
		return nil
	}
	if _, err := o.printer(); err != nil {
		return usageErrorf("--output %q: not table or wide, and kubectl's printers: %v", o.Output, err)
	}
	return nil
}

// withCluster adds --cluster-name to a request's parameters.
func (o *Options) withCluster(q url.Values) url.Values {
	if o.ClusterName != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set(v1alpha1.ParamCluster, o.ClusterName)
	}
	return q
}

// clusterColumn reports whether a table shows the CLUSTER column: when its
// rows are of more than one cluster (the unnamed one counting as one).
func clusterColumn[T any](items []T, cluster func(T) string) bool {
	for _, it := range items[min(1, len(items)):] {
		if cluster(it) != cluster(items[0]) {
			return true
		}
	}
	return false
}

// clusterName shows a cluster's name, "-" for the unnamed one.
func clusterName(c string) string {
	if c == "" {
		return "-"
	}
	return c
}

func (o *Options) client() (client.Client, error) {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if o.SidecarURL != "" {
		if err != nil {
			// A direct address needs no kubeconfig; without one the
			// request carries no credentials.
			cfg = nil
		}
		c, err := client.NewDirect(o.SidecarURL, cfg)
		if err != nil {
			return nil, usageErrorf("--sidecar-url %v", err)
		}
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return client.NewAggregated(cfg)
}

// namespace returns the namespace from -n or the kubeconfig.
func (o *Options) namespace() (string, error) {
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// NewCommand returns the kubectl-schedscope command.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:   "kubectl-schedscope",
		Short: "Explain the scheduler's decisions",
		Long: `Explain the scheduler's decisions, as recorded by schedscope.

Exit codes: 0 ok (for explain: the pod is scheduled), 1 error, 2 usage,
3 the pod is pending (its latest attempt did not schedule it), 4 not found.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		Version:       version.Version,
		// Shown in usage as kubectl runs it.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl schedscope"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("a subcommand is required: explain, history, pending, top, shadow, status, ui or version")
		},
	}
	cmd.SetVersionTemplate("kubectl schedscope {{.Version}}\n")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: ExitUsage, Err: err} })
	o.AddFlags(cmd.PersistentFlags())
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(outputFormats...))
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.AddCommand(newExplainCommand(o), newHistoryCommand(o), newPendingCommand(o), newTopCommand(o), newShadowCommand(o), newStatusCommand(o), newUICommand(o), newVersionCommand(o))
	return cmd
}

// Execute runs the command with args and returns the exit code, printing
// the error if any.
func Execute(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	code := ExitCode(err)
	if err != nil {
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Err != nil {
			fmt.Fprintln(streams.ErrOut, "error:", err)
		}
		if code == ExitFailure && isCobraUsage(err) {
			code = ExitUsage
		}
	}
	return code
}

// isCobraUsage recognizes cobra's own argument errors.
func isCobraUsage(err error) bool {
	var ee *ExitError
	if errors.As(err, &ee) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires ", "unknown flag", "unknown shorthand"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"

	"github.com/spf13/cobra"
	"k8s.io/kubectl/pkg/proxy"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

type uiOptions struct {
	*Options
	address      string
	port         int
	acceptHosts  string
	acceptRemote bool
}

func newUICommand(o *Options) *cobra.Command {
	u := &uiOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "ui [--port 8001]",
		Short: "Serve the web page on this machine with your kubeconfig's credentials",
		Long: `Serve the web page on loopback, as kubectl proxy does: the page and the API
requests it makes go to the kube-apiserver, which serves the API group
schedscope.io (and the page under /apis/schedscope.io/v1alpha1/ui/) from
the sidecar, with the kubeconfig's credentials. Only the API group's paths
are proxied. Runs until interrupted.

Whoever reaches the address acts with the kubeconfig's credentials, so an
--address that is not loopback is refused unless --accept-remote is set;
then --accept-hosts must also match the host name browsers use.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return u.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&u.address, "address", "127.0.0.1", "The address to serve on. An address that is not loopback needs --accept-remote.")
	cmd.Flags().IntVar(&u.port, "port", 8001, "The port to serve on; 0 picks a free one.")
	cmd.Flags().StringVar(&u.acceptHosts, "accept-hosts", proxy.DefaultHostAcceptRE, "Regular expressions, comma-separated, of the Host headers accepted, as kubectl proxy's --accept-hosts.")
	cmd.Flags().BoolVar(&u.acceptRemote, "accept-remote", false, "Serve on an --address that is not loopback. Anyone who can reach it then reads the API with the kubeconfig's credentials.")
	return cmd
}

// validate refuses an address off loopback unless acceptRemote.
func (u *uiOptions) validate() error {
	if !u.acceptRemote && !isLoopbackAddress(u.address) {
		return fmt.Errorf("--address %q is not a loopback address: whoever reaches it would act with your kubeconfig's credentials; "+
			"serve on 127.0.0.1 (the default), or set --accept-remote to serve there anyway", u.address)
	}
	return nil
}

// isLoopbackAddress reports whether address, a host name or an IP, only
// listens on loopback. Empty means every interface.
func isLoopbackAddress(address string) bool {
	if address == "localhost" {
		return true
	}
	ip := net.ParseIP(address)
	return ip != nil && ip.IsLoopback()
}

func (u *uiOptions) run(ctx context.Context) error {
	if err := u.validate(); err != nil {
		return err
	}
	acceptHosts, err := proxy.MakeRegexpArray(u.acceptHosts)
	if err != nil {
		return fmt.Errorf("--accept-hosts: %w", err)
	}
	cfg, err := u.ConfigFlags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	filter := &proxy.FilterServer{
		AcceptPaths:   []*regexp.Regexp{regexp.MustCompile("^" + regexp.QuoteMeta(v1alpha1.Prefix))},
		AcceptHosts:   acceptHosts,
		RejectMethods: proxy.MakeRegexpArrayOrDie("^(POST|PUT|PATCH|DELETE)$"),
	}
	srv, err := proxy.NewServer("", "/", "/static/", filter, cfg, 0, false)
	if err != nil {
		return fmt.Errorf("proxying to the kube-apiserver: %w", err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(u.address, fmt.Sprint(u.port)))
	if err != nil {
		return err
	}
	fmt.Fprintf(u.Out, "Serving the page at http://%s%s with the kubeconfig's credentials; interrupt to stop.\n", l.Addr(), v1alpha1.UIPath)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeOnListener(l) }()
	select {
	case <-ctx.Done():
		_ = l.Close()
		return nil
	case err := <-errc:
		if err == http.ErrServerClosed {
			return nil
		}
		return err
	}
}

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/version"
)

func newStatusCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show how the sidecar follows the scheduler's records and what its store holds",
		Long: `Show the sidecar's follower (its position in the record stream, the records
lost, relists, the last error) and its store. Needs get on status in the
API group schedscope.io.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("status takes no arguments; got %q", args)
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.status(cmd.Context())
		},
	}
}

func (o *Options) status(ctx context.Context) error {
	c, err := o.newClient()
	if err != nil {
		return err
	}
	body, err := c.Get(ctx, v1alpha1.Prefix+"status", nil)
	if err != nil {
		return notFoundOr(err)
	}
	var s v1alpha1.Status
	if err := json.Unmarshal(body, &s); err != nil {
		return fmt.Errorf("decoding the status: %w", err)
	}
	return o.print(&s, func(w io.Writer) { PrintStatus(w, &s) })
}

// PrintStatus prints the sidecar's status.
func PrintStatus(w io.Writer, s *v1alpha1.Status) {
	if f := s.Follower; f != nil {
		fmt.Fprintf(w, "Stream:    epoch %s, seq %d, watching %t\n", f.Cursor.Epoch, f.Cursor.Seq, f.Watching)
		fmt.Fprintf(w, "Lost:      %d records (last gap %d)\n", f.Cursor.Lost, f.LastGap)
		fmt.Fprintf(w, "Relists:   %d, epoch changes %d\n", f.Relists, f.EpochChanges)
		if !f.LastEventAt.IsZero() {
			fmt.Fprintf(w, "Last event: %s\n", f.LastEventAt.UTC().Format(time.RFC3339))
		}
		if f.LastError != "" {
			fmt.Fprintf(w, "Last error: %s (%s)\n", f.LastError, f.LastErrorAt.UTC().Format(time.RFC3339))
		}
	} else {
		fmt.Fprintln(w, "Stream:    not followed by this sidecar")
	}
	fmt.Fprintf(w, "Store:     %d attempts (%d folded repeats), %d pods, %d bytes of records, %d bytes on disk\n",
		s.Store.Attempts, s.Store.Folded, s.Store.Pods, s.Store.Bytes, s.Store.DiskBytes)
	if len(s.Store.Clusters) == 1 && s.Store.Clusters[0].Cluster == "" {
		return // one unnamed cluster: the line above is its
	}
	for _, c := range s.Store.Clusters {
		name := c.Cluster
		if name == "" {
			name = "(unnamed)"
		}
		fmt.Fprintf(w, "  cluster %s: %d attempts (%d folded repeats), %d pods, %d bytes of records\n", name, c.Attempts, c.Folded, c.Pods, c.Bytes)
	}
}

func newVersionCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(o.Out, "kubectl schedscope %s\n", version.Version)
			return err
		},
	}
}

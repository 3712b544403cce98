package backup

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// NewCommand returns `muster-apiserver backup`, which the chart's CronJob
// muster-etcd-backup runs.
func NewCommand() *cobra.Command {
	o := DefaultOptions()
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Save a snapshot of Muster's etcd into a directory, keeping the newest --keep",
		Long: "Asks the etcd members of --etcd-servers, one at a time, for a snapshot, and writes the first one given to " +
			"--dir/muster-etcd-<UTC time>.db (through a .part file, renamed once complete, synced and its checksum " +
			"checked). Then deletes the oldest snapshots of that form beyond --keep. docs/etcd.md says how to restore one.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(c *cobra.Command, _ []string) error {
			r, err := Run(c.Context(), o, time.Now())
			if err != nil {
				return err
			}
			klog.FromContext(c.Context()).Info("Saved a snapshot of etcd", "path", r.Path, "bytes", r.Size,
				"server", r.Server, "etcdVersion", r.Version, "pruned", r.Pruned)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&o.Servers, "etcd-servers", o.Servers, "etcd client URLs, tried in order until one member gives a snapshot.")
	fs.StringVar(&o.CAFile, "etcd-cafile", o.CAFile, "CA bundle that signs etcd's serving certificate.")
	fs.StringVar(&o.CertFile, "etcd-certfile", o.CertFile, "Client certificate etcd accepts.")
	fs.StringVar(&o.KeyFile, "etcd-keyfile", o.KeyFile, "Key of --etcd-certfile.")
	fs.StringVar(&o.Dir, "dir", o.Dir, "Directory the snapshots go to: a volume of their own, not etcd's data volume.")
	fs.IntVar(&o.Keep, "keep", o.Keep, "How many snapshots to keep in --dir; older ones are deleted after a new one is complete.")
	fs.DurationVar(&o.DialTimeout, "dial-timeout", o.DialTimeout, "How long a member may take to answer before the next is tried.")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long one member's snapshot may take.")
	return cmd
}

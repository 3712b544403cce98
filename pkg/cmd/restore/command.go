package restore

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// NewCommand returns `muster-apiserver restore`.
func NewCommand() *cobra.Command {
	o := DefaultOptions()
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Make one etcd member's data directory anew from a snapshot",
		Long: "Restores --snapshot into --data-dir for the member --name of --initial-cluster, with every revision raised by " +
			"--bump-revision and the old ones marked compacted, so that watchers relist. An existing data directory is " +
			"moved aside, never deleted. Run it with etcd stopped, once per member with that member's flags. The defaults " +
			"are those of the chart's single bundled member. docs/etcd.md gives the whole procedure.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(c *cobra.Command, _ []string) error {
			r, err := Run(o, time.Now())
			if err != nil {
				return err
			}
			klog.FromContext(c.Context()).Info("Restored etcd's data", "snapshot", o.Snapshot, "dataDir", o.DataDir,
				"member", o.Name, "previousDataMovedTo", r.MovedAside)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Snapshot, "snapshot", o.Snapshot, "The snapshot file, e.g. /var/lib/muster-backup/muster-etcd-20261127T061700Z.db.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "The member's data directory, as its etcd --data-dir (the chart's: /var/lib/etcd/data).")
	fs.StringVar(&o.Name, "name", o.Name, "The member's --name.")
	fs.StringVar(&o.InitialCluster, "initial-cluster", o.InitialCluster, "The members' --initial-cluster.")
	fs.StringVar(&o.PeerURL, "initial-advertise-peer-urls", o.PeerURL, "The member's --initial-advertise-peer-urls.")
	fs.StringVar(&o.ClusterToken, "initial-cluster-token", o.ClusterToken, "The members' --initial-cluster-token.")
	fs.Uint64Var(&o.RevisionBump, "bump-revision", o.RevisionBump, "How far to raise the revision; the old revisions are marked compacted.")
	return cmd
}

package server

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// webhookPathPrefix is where the pod webhook is served.
const webhookPathPrefix = "/webhooks/"

// NewCommand returns the muster-apiserver command.
func NewCommand(ctx context.Context, o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "muster-apiserver",
		Short: "Serve Muster's gang-admission API (scheduling.muster.dev) as an aggregated API server",
		Long: "muster-apiserver serves the Workload and PodGroup kinds of scheduling.muster.dev/v1alpha1 " +
			"from its own etcd. Register it with kube-apiserver as an APIService, or try it with --standalone.",
		SilenceUsage: true,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Complete(c.Flags()); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return Run(c.Context(), o)
		},
	}
	cmd.SetContext(ctx)
	o.AddFlags(cmd.Flags())
	return cmd
}

// Run serves the API until ctx ends. Options must be completed and valid.
func Run(ctx context.Context, o *Options) error {
	if o.embeddedEtcdURL != "" {
		// The embedded etcd stops when Run returns, on any path, and Run
		// returns only once it has stopped and flushed its data.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		stopped, err := startEmbeddedEtcd(ctx, o.DataDir, o.embeddedEtcdURL)
		if err != nil {
			cancel()
			return err
		}
		defer func() {
			cancel()
			<-stopped
		}()
	}
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	server, err := cfg.Complete().New()
	if err != nil {
		return err
	}
	webhook := pods.NewHandler(klog.FromContext(ctx).WithName("webhook"))
	server.GenericAPIServer.Handler.NonGoRestfulMux.Handle(pods.MutatePath, webhook)
	server.GenericAPIServer.Handler.NonGoRestfulMux.Handle(pods.ValidatePath, webhook)
	if o.Standalone {
		klog.FromContext(ctx).Info("Running standalone: loopback only, no delegated authentication, no controller")
	}
	if o.Controller.Enabled {
		hook := o.Controller.startController(cfg.GenericConfig.ClientConfig, cfg.GenericConfig.LoopbackClientConfig)
		if err := server.GenericAPIServer.AddPostStartHook("start-"+scheduling.ControllerName, hook); err != nil {
			return fmt.Errorf("adding controller hook: %w", err)
		}
	}
	if err := server.GenericAPIServer.PrepareRun().RunWithContext(ctx); err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

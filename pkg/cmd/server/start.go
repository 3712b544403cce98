package server

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/version"
	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// NewCommand returns the muster-apiserver command.
func NewCommand(ctx context.Context, o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "muster-apiserver",
		Short: "Serve Muster's gang-admission API (scheduling.muster.dev) as an aggregated API server",
		Long: "muster-apiserver serves the Workload and PodGroup kinds of scheduling.muster.dev/v1alpha1 " +
			"from its own etcd. Register it with kube-apiserver as an APIService, or try it with --standalone.",
		SilenceUsage: true,
		// Cobra prints this for --version and returns before RunE.
		Version: version.Get().String(),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.applyLogging(); err != nil {
				return err
			}
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
	// Declared here rather than left to cobra, which would also give it the
	// shorthand -v: too close to klog's --v verbosity flag.
	cmd.Flags().Bool("version", false, "Print the version (the same as the image tag's and the chart's) and exit.")
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	return cmd
}

// Run serves the API until ctx ends, or with --webhook-only the webhook
// alone. Options must be completed and valid.
func Run(ctx context.Context, o *Options) error {
	if o.WebhookOnly {
		return runWebhookOnly(ctx, o)
	}
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
	if o.Certs.internal() {
		// Before serving: a replica must never present no certificate, or
		// one that kube-apiserver does not trust yet.
		if err := o.Certs.start(ctx); err != nil {
			return err
		}
	}
	server, err := cfg.Complete().New()
	if err != nil {
		return err
	}
	if o.Webhook.enabled() {
		var stop func()
		ctx, stop, err = o.serveWebhook(ctx, server.GenericAPIServer, cfg.GenericConfig.SecureServing.Cert)
		if err != nil {
			return err
		}
		defer stop()
	}
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

// serveWebhook starts the pod webhook's own listener, which runs until ctx
// ends or stop is called; stop returns once it has shut down. The returned
// context ends too if the listener fails, stopping the server: a replica
// that cannot serve the webhook must not look healthy.
func (o *Options) serveWebhook(ctx context.Context, api *genericapiserver.GenericAPIServer, certs dynamiccertificates.CertKeyContentProvider) (context.Context, func(), error) {
	logger := klog.FromContext(ctx).WithName("webhook")
	clientCA, err := o.Webhook.clientCA(ctx)
	if err != nil {
		return ctx, nil, err
	}
	l, err := o.Webhook.listen(o.RecommendedOptions.SecureServing.BindAddress)
	if err != nil {
		return ctx, nil, err
	}
	ws := newWebhookServer(logger, certs, clientCA, pods.NewHandler(logger), defaultWebhookLimits)
	// Post-start hooks run once the API's port serves: the webhook's
	// readiness waits for that once, and never again for etcd.
	if err := api.AddPostStartHook("muster-webhook-ready", func(genericapiserver.PostStartHookContext) error {
		ws.ready.Store(true)
		return nil
	}); err != nil {
		_ = l.Close()
		return ctx, nil, fmt.Errorf("adding webhook readiness hook: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		if err := ws.serve(ctx, l); err != nil {
			logger.Error(err, "Pod webhook stopped; stopping the server")
		}
	}()
	return ctx, func() { cancel(); <-done }, nil
}

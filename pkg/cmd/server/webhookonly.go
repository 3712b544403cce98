package server

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// Webhook-only mode (--webhook-only) serves the pod webhook and nothing
// else: no API, no etcd, no controller, no client of kube-apiserver. The
// chart's muster-webhook Deployment runs it, so that the webhook, which
// every labelled pod create in the cluster waits on, shares neither a
// process nor a memory limit with the controller's caches: a controller
// run out of memory by what a tenant sends cannot refuse creates. Its
// memory is the listener's, bounded by WebhookMaxBufferedBytes and
// WebhookMaxInFlight.

// validateWebhookOnly checks what webhook-only mode needs: a port, and a
// serving certificate in files (the Secret Muster keeps, mounted), since
// it has no client to read or make one with.
func (o *Options) validateWebhookOnly() []error {
	var errs []error
	if !o.Webhook.enabled() {
		errs = append(errs, fmt.Errorf("--webhook-only serves the webhook alone: --webhook-port must not be 0"))
	}
	key := o.RecommendedOptions.SecureServing.ServerCert.CertKey
	if key.CertFile == "" || key.KeyFile == "" {
		errs = append(errs, fmt.Errorf("--webhook-only needs --tls-cert-file and --tls-private-key-file: it has no client to make a certificate with"))
	}
	if o.Standalone {
		errs = append(errs, fmt.Errorf("--webhook-only and --standalone exclude each other: a standalone server has no cluster to call a webhook"))
	}
	if o.Certs.internal() {
		errs = append(errs, fmt.Errorf("--webhook-only serves --tls-cert-file; --cert-management=internal belongs to the API's replicas"))
	}
	return errs
}

// runWebhookOnly serves the webhook until ctx ends. The certificate files
// are reloaded when they change (a mounted Secret is updated in place as
// the API's replicas rotate it), and so is --webhook-client-ca-file.
func runWebhookOnly(ctx context.Context, o *Options) error {
	logger := klog.FromContext(ctx).WithName("webhook")
	key := o.RecommendedOptions.SecureServing.ServerCert.CertKey
	certs, err := dynamiccertificates.NewDynamicServingContentFromFiles("webhook-serving-cert", key.CertFile, key.KeyFile)
	if err != nil {
		return fmt.Errorf("loading --tls-cert-file: %w", err)
	}
	go certs.Run(ctx, 1)
	clientCA, err := o.Webhook.clientCA(ctx)
	if err != nil {
		return err
	}
	l, err := o.Webhook.listen(o.RecommendedOptions.SecureServing.BindAddress)
	if err != nil {
		return err
	}
	ws := newWebhookServer(logger, certs, clientCA, pods.NewHandler(logger), defaultWebhookLimits)
	// Ready at once: it waits on nothing but its own listener.
	ws.ready.Store(true)
	logger.Info("Serving the pod webhook only (--webhook-only)")
	return ws.serve(ctx, l)
}

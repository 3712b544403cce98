package server

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"

	"github.com/muster-dev/muster/pkg/manifests"
)

// WebhookOptions configure the pod webhook's own listener.
type WebhookOptions struct {
	// BindPort is the port the webhook is served on; 0 serves no webhook.
	// It listens on --bind-address, like the API.
	BindPort int
	// ClientCAFile, when set, serves the webhook paths only to callers that
	// present a client certificate signed by one of its CAs.
	ClientCAFile string
	// Listener, when set, is used instead of listening on BindPort (tests).
	Listener net.Listener
}

// NewWebhookOptions returns the defaults: the webhook on its own port, open
// to any caller that reaches it.
func NewWebhookOptions() *WebhookOptions {
	return &WebhookOptions{BindPort: manifests.DefaultPort}
}

// AddFlags adds the webhook listener's flags.
func (o *WebhookOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.BindPort, "webhook-port", o.BindPort,
		"Port of the pod webhook's own HTTPS listener, apart from --secure-port: kube-apiserver's webhook calls never share the API's "+
			"priority-and-fairness, authentication or connections, and the listener's /readyz does not depend on etcd. It uses the "+
			"API's serving certificate and --bind-address. 0 serves no webhook.")
	fs.StringVar(&o.ClientCAFile, "webhook-client-ca-file", o.ClientCAFile,
		"If set, the webhook paths are served only to callers presenting a client certificate signed by a CA in this file "+
			"(kube-apiserver presents one through its AdmissionConfiguration's kubeConfigFile). The file is reloaded when it changes.")
}

// Validate checks the options.
func (o *WebhookOptions) Validate() []error {
	var errs []error
	if o.BindPort < 0 || o.BindPort > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port %d must be between 0 and 65535", o.BindPort))
	}
	if o.ClientCAFile != "" {
		if _, err := os.Stat(o.ClientCAFile); err != nil {
			errs = append(errs, fmt.Errorf("--webhook-client-ca-file: %w", err))
		}
	}
	return errs
}

// clientCA loads --webhook-client-ca-file, reloaded as it changes until
// ctx ends; nil when none is given.
func (o *WebhookOptions) clientCA(ctx context.Context) (dynamiccertificates.CAContentProvider, error) {
	if o.ClientCAFile == "" {
		return nil, nil
	}
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("webhook-client-ca", o.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("loading --webhook-client-ca-file: %w", err)
	}
	go ca.Run(ctx, 1)
	return ca, nil
}

// enabled reports whether the webhook is served at all.
func (o *WebhookOptions) enabled() bool {
	return o.Listener != nil || o.BindPort != 0
}

// listen returns the listener the webhook is served on.
func (o *WebhookOptions) listen(ip net.IP) (net.Listener, error) {
	if o.Listener != nil {
		return o.Listener, nil
	}
	host := ""
	if ip != nil && !ip.IsUnspecified() {
		host = ip.String()
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(o.BindPort)))
	if err != nil {
		return nil, fmt.Errorf("listening for the pod webhook on port %d: %w", o.BindPort, err)
	}
	return l, nil
}

package server

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	netutils "k8s.io/utils/net"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/certs"
	"github.com/muster-dev/muster/pkg/manifests"
)

// Values of --cert-management.
const (
	// CertManagementInternal makes Muster create, rotate and publish its
	// own CA and serving certificate.
	CertManagementInternal = "internal"
	// CertManagementNone serves --tls-cert-file, made by someone else
	// (cert-manager, or by hand).
	CertManagementNone = "none"
)

// DefaultCertSecretName is the Secret that holds Muster's own certificates.
const DefaultCertSecretName = "muster-apiserver-certs"

// CertOptions configure Muster's management of its own certificates.
type CertOptions struct {
	// Management is internal or none; empty until Complete resolves it.
	Management string
	// Secret and Service are namespace/name.
	Secret  string
	Service string
	// ExtraSANs are added to the serving certificate's names.
	ExtraSANs []string
	// Lifetime is the serving certificate's, CALifetime each CA's.
	Lifetime   time.Duration
	CALifetime time.Duration
	// APIService and WebhookConfigurations name the objects whose caBundle
	// Muster keeps; empty leaves them alone.
	APIService            string
	WebhookConfigurations string
	// StartTimeout bounds the wait for a first serving certificate.
	StartTimeout time.Duration

	// content is the serving certificate the manager keeps, given to the
	// secure serving options before the manager exists.
	content *certs.ServingContent
	manager *certs.Manager
}

// NewCertOptions returns the defaults: a serving certificate of 90 days,
// renewed after 60, and CAs of three years, replaced after two.
func NewCertOptions() *CertOptions {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = scheduling.DefaultServerNamespace
	}
	return &CertOptions{
		Secret:                ns + "/" + DefaultCertSecretName,
		Service:               ns + "/muster-apiserver",
		Lifetime:              90 * 24 * time.Hour,
		CALifetime:            3 * 365 * 24 * time.Hour,
		APIService:            "v1alpha1.scheduling.muster.dev",
		WebhookConfigurations: manifests.ConfigurationName,
		StartTimeout:          time.Minute,
		content:               &certs.ServingContent{},
	}
}

// AddFlags adds the certificate flags.
func (o *CertOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Management, "cert-management", o.Management,
		"Who makes the serving certificate. internal: Muster creates a CA and a serving certificate in --cert-secret, rotates both long "+
			"before they expire, and writes the CA bundle into its APIService and webhook configurations. none: serve --tls-cert-file "+
			"(cert-manager, or by hand). Empty: internal when running in a pod with no --tls-cert-file, else none.")
	fs.StringVar(&o.Secret, "cert-secret", o.Secret,
		"namespace/name of the Secret holding Muster's CAs and serving certificate, shared by all replicas (--cert-management=internal). "+
			"Defaults to $POD_NAMESPACE/"+DefaultCertSecretName+".")
	fs.StringVar(&o.Service, "cert-service", o.Service,
		"namespace/name of the Service in front of the API and the webhook; its DNS names go into the serving certificate.")
	fs.StringSliceVar(&o.ExtraSANs, "cert-extra-sans", o.ExtraSANs,
		"Extra names of the serving certificate; entries that parse as IP addresses become IP SANs.")
	fs.DurationVar(&o.Lifetime, "cert-lifetime", o.Lifetime,
		"Lifetime of the serving certificate; it is renewed at two thirds of it.")
	fs.DurationVar(&o.CALifetime, "cert-ca-lifetime", o.CALifetime,
		"Lifetime of each CA. At two thirds of it a next CA joins the published bundle; a sixth of its lifetime later it starts signing, "+
			"and the CA it replaces stays trusted until it expires.")
	fs.StringVar(&o.APIService, "cert-apiservice", o.APIService,
		"APIService whose spec.caBundle Muster keeps (--cert-management=internal); empty leaves it alone.")
	fs.StringVar(&o.WebhookConfigurations, "cert-webhook-configurations", o.WebhookConfigurations,
		"Name of the mutating and the validating webhook configuration whose caBundles Muster keeps (--cert-management=internal), "+
			"also with --webhook-port=0: the webhook's own Deployment (--webhook-only) serves the same certificate. Empty leaves them alone.")
}

// complete resolves an empty --cert-management: internal in a pod that was
// given no serving certificate, else none.
func (o *CertOptions) complete(standalone, certFileGiven bool) {
	if o.Management != "" {
		return
	}
	o.Management = CertManagementNone
	if !standalone && !certFileGiven && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		o.Management = CertManagementInternal
	}
}

// Validate checks the options.
func (o *CertOptions) Validate(standalone, certFileGiven bool) []error {
	switch o.Management {
	case "", CertManagementNone:
		return nil
	case CertManagementInternal:
	default:
		return []error{fmt.Errorf("--cert-management must be %s or %s, not %q", CertManagementInternal, CertManagementNone, o.Management)}
	}
	var errs []error
	if standalone {
		errs = append(errs, fmt.Errorf("--cert-management=internal needs a cluster; --standalone makes its own certificate"))
	}
	if certFileGiven {
		errs = append(errs, fmt.Errorf("--cert-management=internal makes its own serving certificate; drop --tls-cert-file and --tls-private-key-file, or use --cert-management=none"))
	}
	for flag, v := range map[string]string{"--cert-secret": o.Secret, "--cert-service": o.Service} {
		if _, _, err := splitRef(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	if o.Lifetime < time.Minute {
		errs = append(errs, fmt.Errorf("--cert-lifetime %s is shorter than a minute", o.Lifetime))
	}
	if o.CALifetime < 2*o.Lifetime {
		errs = append(errs, fmt.Errorf("--cert-ca-lifetime %s must be at least twice --cert-lifetime %s", o.CALifetime, o.Lifetime))
	}
	return errs
}

// internal reports whether Muster manages its certificates.
func (o *CertOptions) internal() bool { return o.Management == CertManagementInternal }

// names are the serving certificate's SANs: the Service's DNS names, then
// the extra ones.
func (o *CertOptions) names() certs.Names {
	ns, name, _ := splitRef(o.Service)
	n := certs.Names{DNSNames: []string{
		name + "." + ns + ".svc",
		name,
		name + "." + ns,
		name + "." + ns + ".svc.cluster.local",
	}}
	for _, san := range o.ExtraSANs {
		if ip := netutils.ParseIPSloppy(san); ip != nil {
			n.IPs = append(n.IPs, ip)
		} else if san != "" {
			n.DNSNames = append(n.DNSNames, san)
		}
	}
	return n
}

// newManager builds the manager from the server's client configuration.
// It keeps the webhook configurations' caBundle whether or not this
// replica serves the webhook: the chart's muster-webhook Deployment serves
// the same certificate, from the same Secret.
func (o *CertOptions) newManager(kubeConfig *rest.Config) error {
	cfg := rest.CopyConfig(kubeConfig)
	kube, err := kubernetes.NewForConfig(rest.AddUserAgent(cfg, "muster-apiserver-certificates"))
	if err != nil {
		return fmt.Errorf("creating client for certificates: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating dynamic client for certificates: %w", err)
	}
	ns, name, _ := splitRef(o.Secret)
	targets := certs.Targets{APIService: o.APIService, WebhookConfigurations: o.WebhookConfigurations}
	o.manager = certs.New(kube, dyn, ns, name, certs.Config{Names: o.names(), Lifetime: o.Lifetime, CALifetime: o.CALifetime}, targets, o.content)
	return nil
}

// start runs the manager until ctx ends, returning once it serves a
// certificate.
func (o *CertOptions) start(ctx context.Context) error {
	return o.manager.Start(ctx, o.StartTimeout)
}

// splitRef splits namespace/name.
func splitRef(ref string) (string, string, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q is not namespace/name", ref)
	}
	return ns, name, nil
}

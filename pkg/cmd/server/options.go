// Package server holds muster-apiserver's options and its start command.
package server

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	netutils "k8s.io/utils/net"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/apiserver"
	musteropenapi "github.com/muster-dev/muster/pkg/generated/openapi"
)

const defaultEtcdPathPrefix = "/registry/scheduling.muster.dev"

// Options are muster-apiserver's command-line options.
type Options struct {
	RecommendedOptions *genericoptions.RecommendedOptions

	// DataDir holds the embedded etcd's data, and in standalone mode the
	// self-signed certificate and the kubeconfig.
	DataDir string
	// Standalone runs the API with no cluster: loopback only, every request
	// as one local admin.
	Standalone bool
	// StandaloneKubeconfig is where standalone mode writes a kubeconfig for
	// kubectl; empty means <data-dir>/kubeconfig.
	StandaloneKubeconfig string
	// WebhookOnly serves the pod webhook alone (webhookonly.go).
	WebhookOnly bool

	// Controller configures the embedded gang-admission controller.
	Controller *ControllerOptions
	// Webhook configures the pod webhook's own listener.
	Webhook *WebhookOptions
	// Certs configures the management of Muster's own certificates.
	Certs *CertOptions
	// Views configures whatifreviews, pendingpodgroups and the forwarding
	// of both to the leader.
	Views *ViewOptions
	// Logs configures logging as in Kubernetes' own components
	// (--logging-format, -v, --vmodule); applying it also turns on
	// contextual logging where its feature gate is on, so that log lines
	// carry their PodGroup.
	Logs *logsapi.LoggingConfiguration

	// embeddedEtcdURL is set by Complete when no --etcd-servers was given.
	embeddedEtcdURL string
	bindAddressSet  bool
}

// NewOptions returns the default options.
func NewOptions() *Options {
	o := &Options{
		RecommendedOptions: genericoptions.NewRecommendedOptions(
			defaultEtcdPathPrefix,
			apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion),
		),
		DataDir:    "muster-data",
		Controller: NewControllerOptions(),
		Webhook:    NewWebhookOptions(),
		Certs:      NewCertOptions(),
		Views:      NewViewOptions(),
		Logs:       logsapi.NewLoggingConfiguration(),
	}
	o.RecommendedOptions.Etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(
		v1alpha1.SchemeGroupVersion, schema.GroupKind{Group: v1alpha1.GroupName})
	registerAdmission(o.RecommendedOptions.Admission)
	return o
}

// AddFlags adds the generic server flags and Muster's own.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.RecommendedOptions.AddFlags(fs)
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir,
		"Directory of the embedded etcd, used when --etcd-servers is empty, and of standalone mode's certificate and kubeconfig.")
	fs.BoolVar(&o.Standalone, "standalone", o.Standalone,
		"Serve the API with no Kubernetes cluster, for trying it out: binds to loopback only, runs every request as one local admin, "+
			"and writes a kubeconfig (see --standalone-kubeconfig). Never use it on a shared machine.")
	fs.StringVar(&o.StandaloneKubeconfig, "standalone-kubeconfig", o.StandaloneKubeconfig,
		"Where --standalone writes its kubeconfig. Defaults to <data-dir>/kubeconfig.")
	fs.BoolVar(&o.WebhookOnly, "webhook-only", o.WebhookOnly,
		"Serve only the pod webhook, on --webhook-port and --bind-address, with --tls-cert-file and --tls-private-key-file and "+
			"--webhook-client-ca-file (each reloaded when it changes): no API, no etcd, no controller and no client of kube-apiserver. "+
			"The chart's muster-webhook Deployment runs it, so that the webhook shares neither a process nor a memory limit with the "+
			"controller's caches. Every other flag is ignored.")
	o.Controller.AddFlags(fs)
	o.Webhook.AddFlags(fs)
	o.Certs.AddFlags(fs)
	o.Views.AddFlags(fs)
	logsapi.AddFlags(o.Logs, fs)
}

// Complete fills in what the flags left open. flagSet tells which flags the
// user set; it may be nil in tests.
func (o *Options) Complete(flagSet *pflag.FlagSet) error {
	if flagSet != nil {
		o.bindAddressSet = flagSet.Changed("bind-address")
	}
	if o.WebhookOnly {
		// No API: no etcd, and no certificate of its own to manage.
		o.Controller.Enabled = false
		if o.Certs.Management == "" {
			o.Certs.Management = CertManagementNone
		}
		return nil
	}
	if o.Standalone {
		o.completeStandalone()
	}
	o.Certs.complete(o.Standalone, o.certFileGiven())
	if len(o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList) == 0 {
		url, err := pickEmbeddedEtcdURL()
		if err != nil {
			return err
		}
		o.embeddedEtcdURL = url
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{url}
	}
	return nil
}

// Validate checks the options.
func (o *Options) Validate() error {
	if o.WebhookOnly {
		return utilerrors.NewAggregate(append(o.Webhook.Validate(), o.validateWebhookOnly()...))
	}
	errs := o.RecommendedOptions.Validate()
	errs = append(errs, o.Webhook.Validate()...)
	errs = append(errs, o.Certs.Validate(o.Standalone, o.certFileGiven())...)
	if o.Standalone {
		errs = append(errs, o.validateStandalone()...)
	} else {
		errs = append(errs, o.Controller.Validate()...)
		errs = append(errs, o.Views.Validate()...)
	}
	if o.embeddedEtcdURL != "" && o.DataDir == "" {
		errs = append(errs, fmt.Errorf("--data-dir is required when --etcd-servers is empty (the embedded etcd stores its data there)"))
	}
	return utilerrors.NewAggregate(errs)
}

// certFileGiven reports whether a serving certificate file was given.
func (o *Options) certFileGiven() bool {
	key := o.RecommendedOptions.SecureServing.ServerCert.CertKey
	return key.CertFile != "" || key.KeyFile != ""
}

// Config builds the server configuration from completed, valid options.
func (o *Options) Config() (*apiserver.Config, error) {
	if o.Standalone && o.RecommendedOptions.SecureServing.ServerCert.CertKey.CertFile == "" {
		o.RecommendedOptions.SecureServing.ServerCert.CertDirectory = filepath.Join(o.DataDir, "certificates")
	}
	if o.Certs.internal() {
		// Served from the Secret, and reloaded as it rotates; the manager
		// fills it once the client configuration exists, before serving.
		o.RecommendedOptions.SecureServing.ServerCert.GeneratedCert = o.Certs.content
	} else if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil,
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}

	o.RecommendedOptions.ExtraAdmissionInitializers = func(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		// Runs after the core API client is set up and before the admission
		// chain is built: the last moment to drop plugins the cluster cannot serve.
		if err := gateAdmissionPlugins(context.Background(), o.RecommendedOptions.Admission, c.ClientConfig); err != nil {
			return nil, err
		}
		init, err := admissionInitializer(c.LoopbackClientConfig)
		if err != nil {
			return nil, err
		}
		return []admission.PluginInitializer{init}, nil
	}

	cfg := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(musteropenapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "Muster"
	cfg.OpenAPIConfig.Info.Version = v1alpha1.SchemeGroupVersion.Version
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(musteropenapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "Muster"
	cfg.OpenAPIV3Config.Info.Version = v1alpha1.SchemeGroupVersion.Version
	cfg.FeatureGate = utilfeature.DefaultFeatureGate
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()

	if err := o.RecommendedOptions.ApplyTo(cfg); err != nil {
		return nil, fmt.Errorf("applying options: %w", err)
	}
	if o.Standalone {
		if err := o.applyStandalone(cfg); err != nil {
			return nil, err
		}
	}
	if o.Certs.internal() {
		if err := o.Certs.newManager(cfg.ClientConfig); err != nil {
			return nil, err
		}
	}
	out := &apiserver.Config{GenericConfig: cfg, PodCleanup: o.Controller.Enabled && !o.Standalone}
	// The views read the controller's admission: served where it runs.
	if o.Controller.Enabled && !o.Standalone {
		views, err := o.views(cfg.ClientConfig, cfg.Authorization.Authorizer)
		if err != nil {
			return nil, err
		}
		out.Views = views
		o.Controller.views = o.Views.service
	}
	return out, nil
}

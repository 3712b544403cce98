package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// apiDependentPlugin is an admission plugin of k8s.io/apiserver that watches
// cluster objects through informers. On a cluster that does not serve those
// objects, the informers never sync and muster-apiserver never becomes ready,
// so such a plugin is enabled only when discovery finds every resource.
type apiDependentPlugin struct {
	plugin       string
	groupVersion string
	resources    []string
}

// apiDependentPlugins are the plugins of the generic admission chain that
// need an API the cluster may lack. MutatingAdmissionPolicy watches
// admissionregistration.k8s.io/v1 objects that only newer releases serve;
// the others are served by every supported release, and are checked the
// same way so that an older or trimmed cluster degrades instead of hanging.
// NamespaceLifecycle (namespaces) and Muster's own plugin need nothing more.
var apiDependentPlugins = []apiDependentPlugin{
	{mutatingadmissionpolicy.PluginName, "admissionregistration.k8s.io/v1", []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}},
	{validatingadmissionpolicy.PluginName, "admissionregistration.k8s.io/v1", []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}},
	{mutatingwebhook.PluginName, "admissionregistration.k8s.io/v1", []string{"mutatingwebhookconfigurations"}},
	{validatingwebhook.PluginName, "admissionregistration.k8s.io/v1", []string{"validatingwebhookconfigurations"}},
}

// unservedPlugin is a plugin turned off, and the first resource it lacks.
type unservedPlugin struct {
	plugin  string
	missing string
}

// unservedPlugins returns the plugins among enabled whose resources are not
// all in served, a set of "<group>/<version>/<resource>".
func unservedPlugins(enabled []string, served sets.Set[string]) []unservedPlugin {
	var off []unservedPlugin
	for _, p := range apiDependentPlugins {
		if !slices.Contains(enabled, p.plugin) {
			continue
		}
		for _, r := range p.resources {
			if gvr := p.groupVersion + "/" + r; !served.Has(gvr) {
				off = append(off, unservedPlugin{plugin: p.plugin, missing: gvr})
				break
			}
		}
	}
	return off
}

// servedResources asks discovery which resources of the plugins' group
// versions the cluster serves. A group version the cluster does not serve at
// all simply contributes nothing.
func servedResources(ctx context.Context, client discovery.ServerResourcesInterfaceWithContext) (sets.Set[string], error) {
	served := sets.New[string]()
	groupVersions := sets.New[string]()
	for _, p := range apiDependentPlugins {
		groupVersions.Insert(p.groupVersion)
	}
	for _, gv := range sets.List(groupVersions) {
		var list []string
		var lastErr error
		err := wait.PollUntilContextTimeout(ctx, time.Second, discoveryTimeout, true, func(ctx context.Context) (bool, error) {
			resources, err := client.ServerResourcesForGroupVersionWithContext(ctx, gv)
			switch {
			case apierrors.IsNotFound(err):
				return true, nil
			case err != nil:
				lastErr = err
				return false, nil
			}
			for _, r := range resources.APIResources {
				list = append(list, gv+"/"+r.Name)
			}
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("discovering %s on the cluster: %w (last error: %v)", gv, err, lastErr)
		}
		served.Insert(list...)
	}
	return served, nil
}

// discoveryTimeout bounds the wait for kube-apiserver's discovery at start.
const discoveryTimeout = 30 * time.Second

// enabledAdmissionPlugins mirrors how AdmissionOptions picks its chain: the
// recommended order, minus what is off by default or disabled, plus what
// --enable-admission-plugins turned back on.
func enabledAdmissionPlugins(a *genericoptions.AdmissionOptions) []string {
	off := sets.New(a.DisablePlugins...).Union(a.DefaultOffPlugins).Difference(sets.New(a.EnablePlugins...))
	var on []string
	for _, p := range a.RecommendedPluginOrder {
		if !off.Has(p) {
			on = append(on, p)
		}
	}
	return on
}

// gateAdmissionPlugins turns off each admission plugin whose API the cluster
// behind clientConfig does not serve, even one named in
// --enable-admission-plugins, since it could never become ready. It logs the
// resulting chain once, naming what was turned off and why.
func gateAdmissionPlugins(ctx context.Context, a *genericoptions.AdmissionOptions, clientConfig *rest.Config) error {
	if a == nil || clientConfig == nil {
		return nil
	}
	client, err := discovery.NewDiscoveryClientForConfig(clientConfig)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	return gateAdmissionPluginsWith(ctx, a, client)
}

// gateAdmissionPluginsWith is gateAdmissionPlugins with a given discovery
// client.
func gateAdmissionPluginsWith(ctx context.Context, a *genericoptions.AdmissionOptions, client discovery.ServerResourcesInterfaceWithContext) error {
	served, err := servedResources(ctx, client)
	if err != nil {
		return err
	}
	off := unservedPlugins(enabledAdmissionPlugins(a), served)
	logger := klog.FromContext(ctx)
	for _, u := range off {
		a.EnablePlugins = slices.DeleteFunc(a.EnablePlugins, func(p string) bool { return p == u.plugin })
		a.DisablePlugins = append(a.DisablePlugins, u.plugin)
		logger.Info("Admission plugin turned off: the cluster does not serve its API", "plugin", u.plugin, "missing", u.missing)
	}
	logger.Info("Admission chain", "plugins", enabledAdmissionPlugins(a))
	return nil
}

package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"
)

// StandaloneUser is who every request runs as in standalone mode.
const StandaloneUser = "muster-standalone-admin"

// completeStandalone turns off everything that needs a cluster: delegated
// authentication and authorization, the core API client, the admission
// plugins that watch cluster objects, and priority and fairness.
func (o *Options) completeStandalone() {
	ro := o.RecommendedOptions
	if !o.bindAddressSet {
		ro.SecureServing.BindAddress = netutils.ParseIPSloppy("127.0.0.1")
	}
	ro.Authentication = nil
	ro.Authorization = nil
	ro.CoreAPI = nil
	ro.Admission = nil
	ro.Features.EnablePriorityAndFairness = false
	// With no cluster there are no pods to admit.
	o.Controller.Enabled = false
}

// validateStandalone refuses any address beyond loopback: with no
// authentication, the server must not be reachable from another host.
func (o *Options) validateStandalone() []error {
	addr := o.RecommendedOptions.SecureServing.BindAddress
	if addr == nil || !addr.IsLoopback() {
		return []error{fmt.Errorf("--standalone serves without authentication and binds to loopback only: --bind-address=%s is not a loopback address", addr)}
	}
	return nil
}

// applyStandalone runs every request as one local admin, installs Muster's
// own admission plugin, and writes a kubeconfig that trusts the server's CA.
func (o *Options) applyStandalone(cfg *genericapiserver.RecommendedConfig) error {
	admin := &user.DefaultInfo{Name: StandaloneUser, Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	cfg.Authentication.Authenticator = authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: admin}, true, nil
	})
	cfg.Authorization.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()

	plugin, err := standaloneAdmission(cfg.LoopbackClientConfig)
	if err != nil {
		return err
	}
	cfg.AdmissionControl = plugin

	return o.writeStandaloneKubeconfig(cfg)
}

// writeStandaloneKubeconfig writes a kubeconfig for kubectl that verifies the
// server's certificate against the CA that signed it, with no insecure flag.
func (o *Options) writeStandaloneKubeconfig(cfg *genericapiserver.RecommendedConfig) error {
	path := o.StandaloneKubeconfig
	if path == "" {
		path = filepath.Join(o.DataDir, "kubeconfig")
	}
	caPEM, err := servingCA(o.RecommendedOptions.SecureServing.ServerCert.CertKey.CertFile)
	if err != nil {
		return err
	}
	addr, ok := cfg.SecureServing.Listener.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("standalone mode needs a TCP listener, got %s", cfg.SecureServing.Listener.Addr())
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["muster"] = &clientcmdapi.Cluster{
		Server:                   "https://" + net.JoinHostPort(addr.IP.String(), fmt.Sprint(addr.Port)),
		CertificateAuthorityData: caPEM,
	}
	// Any credential will do: every request runs as the local admin. Without
	// one, kubectl would prompt for a user name.
	kc.AuthInfos["muster"] = &clientcmdapi.AuthInfo{Token: "standalone"}
	kc.Contexts["muster"] = &clientcmdapi.Context{Cluster: "muster", AuthInfo: "muster", Namespace: "default"}
	kc.CurrentContext = "muster"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating kubeconfig directory: %w", err)
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing standalone kubeconfig: %w", err)
	}
	klog.FromContext(context.Background()).Info("Standalone mode: every request runs as the local admin; try kubectl with this kubeconfig",
		"kubeconfig", path, "user", StandaloneUser)
	return nil
}

// servingCA returns the last certificate of the serving chain: for the
// generated self-signed pair, that is the CA which signed the serving cert.
func servingCA(certFile string) ([]byte, error) {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading serving certificate: %w", err)
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		return nil, fmt.Errorf("parsing serving certificate %s: %w", certFile, err)
	}
	return certutil.EncodeCertificates(certs[len(certs)-1])
}

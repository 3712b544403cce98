package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// certValidity is long enough for any test run or `make run` session and
// short enough that leaked files are not useful for long.
const certValidity = 7 * 24 * time.Hour

// Names of the users and services the harness issues certificates for.
const (
	// FrontProxyClientName is the CN of the client certificate kube-apiserver
	// presents to aggregated API servers.
	FrontProxyClientName = "front-proxy-client"
	// WebhookClientName is the CN of the client certificate kube-apiserver
	// presents to Muster's webhook listener.
	WebhookClientName = "kube-apiserver-webhook-client"
	// MusterNamespace is where Muster's Service and identity live.
	MusterNamespace = "muster-system"
	// MusterService is the Service the APIService points at. The aggregator
	// verifies Muster's serving certificate against <service>.<namespace>.svc.
	MusterService = "muster-apiserver"
)

// pkiFiles are the paths of every certificate and key the harness writes.
type pkiFiles struct {
	CACert, CAKey                     string
	APIServerCert, APIServerKey       string
	LocalServingCert, LocalServKey    string
	AdminCert, AdminKey               string
	SchedulerCert, SchedulerKey       string
	ControllerManagerCert             string
	ControllerManagerKey              string
	FrontProxyCACert                  string
	FrontProxyCert, FrontProxyKey     string
	ServiceAccountKey                 string
	ServiceAccountPub                 string
	MusterServingCert, MusterServKey  string
	MusterClientCert, MusterClientKey string
	// WebhookClientCACert signs WebhookClientCert alone: Muster's
	// --webhook-client-ca-file, so that no other certificate of the
	// cluster is served by the webhook.
	WebhookClientCACert                 string
	WebhookClientCert, WebhookClientKey string
	// MusterEtcdCACert signs Muster's etcd's serving certificate and the
	// client certificate Muster presents to it, alone: a CA for etcd
	// alone, as the chart's bundled etcd has.
	MusterEtcdCACert                        string
	MusterEtcdServerCert, MusterEtcdServKey string
	MusterEtcdClientCert, MusterEtcdClntKey string
}

// authority is a CA that can sign leaf certificates.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// leaf describes one certificate to issue.
type leaf struct {
	commonName   string
	organization []string
	dnsNames     []string
	ips          []net.IP
	usages       []x509.ExtKeyUsage
}

// generatePKI writes a fresh cluster CA, front-proxy CA and every leaf
// certificate the control plane and Muster need into dir.
func generatePKI(dir string) (*pkiFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating pki dir: %w", err)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	files := &pkiFiles{
		CACert: p("ca.crt"), CAKey: p("ca.key"),
		APIServerCert: p("apiserver.crt"), APIServerKey: p("apiserver.key"),
		LocalServingCert: p("localhost.crt"), LocalServKey: p("localhost.key"),
		AdminCert: p("admin.crt"), AdminKey: p("admin.key"),
		SchedulerCert: p("scheduler.crt"), SchedulerKey: p("scheduler.key"),
		ControllerManagerCert: p("controller-manager.crt"), ControllerManagerKey: p("controller-manager.key"),
		FrontProxyCACert: p("front-proxy-ca.crt"),
		FrontProxyCert:   p("front-proxy-client.crt"), FrontProxyKey: p("front-proxy-client.key"),
		ServiceAccountKey: p("sa.key"), ServiceAccountPub: p("sa.pub"),
		MusterServingCert: p("muster-serving.crt"), MusterServKey: p("muster-serving.key"),
		MusterClientCert: p("muster-client.crt"), MusterClientKey: p("muster-client.key"),
		WebhookClientCACert: p("webhook-client-ca.crt"),
		WebhookClientCert:   p("webhook-client.crt"), WebhookClientKey: p("webhook-client.key"),
		MusterEtcdCACert:     p("muster-etcd-ca.crt"),
		MusterEtcdServerCert: p("muster-etcd-server.crt"), MusterEtcdServKey: p("muster-etcd-server.key"),
		MusterEtcdClientCert: p("muster-etcd-client.crt"), MusterEtcdClntKey: p("muster-etcd-client.key"),
	}

	ca, err := newAuthority("muster-local-ca", files.CACert, files.CAKey)
	if err != nil {
		return nil, err
	}
	frontProxyCA, err := newAuthority("muster-local-front-proxy-ca", files.FrontProxyCACert, "")
	if err != nil {
		return nil, err
	}

	webhookClientCA, err := newAuthority("muster-local-webhook-client-ca", files.WebhookClientCACert, "")
	if err != nil {
		return nil, err
	}

	etcdCA, err := newAuthority("muster-local-etcd-ca", files.MusterEtcdCACert, "")
	if err != nil {
		return nil, err
	}

	loopbackIPs := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	musterSvc := MusterService + "." + MusterNamespace
	issues := []struct {
		ca        *authority
		spec      leaf
		cert, key string
	}{
		{ca, leaf{commonName: "kube-apiserver", usages: server, ips: append(loopbackIPs, net.IPv4(10, 96, 0, 1)),
			dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
			files.APIServerCert, files.APIServerKey},
		{ca, leaf{commonName: "localhost", usages: server, ips: loopbackIPs, dnsNames: []string{"localhost"}},
			files.LocalServingCert, files.LocalServKey},
		{ca, leaf{commonName: "muster-admin", organization: []string{"system:masters"}, usages: client},
			files.AdminCert, files.AdminKey},
		{ca, leaf{commonName: "system:kube-scheduler", usages: client},
			files.SchedulerCert, files.SchedulerKey},
		{ca, leaf{commonName: "system:kube-controller-manager", usages: client},
			files.ControllerManagerCert, files.ControllerManagerKey},
		{frontProxyCA, leaf{commonName: FrontProxyClientName, usages: client},
			files.FrontProxyCert, files.FrontProxyKey},
		{ca, leaf{commonName: musterSvc + ".svc", usages: server, ips: loopbackIPs,
			dnsNames: []string{musterSvc + ".svc", musterSvc + ".svc.cluster.local", musterSvc, "localhost"}},
			files.MusterServingCert, files.MusterServKey},
		// Muster authenticates as its service account would in a real
		// deployment, so RBAC written for the service account applies as is.
		{ca, leaf{commonName: serviceAccountUser(MusterNamespace, MusterService), usages: client,
			organization: []string{"system:serviceaccounts", "system:serviceaccounts:" + MusterNamespace}},
			files.MusterClientCert, files.MusterClientKey},
		// kube-apiserver presents it to Muster's webhook (admission.go).
		{webhookClientCA, leaf{commonName: WebhookClientName, usages: client},
			files.WebhookClientCert, files.WebhookClientKey},
		{etcdCA, leaf{commonName: "muster-etcd", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, ips: loopbackIPs, dnsNames: []string{"localhost"}},
			files.MusterEtcdServerCert, files.MusterEtcdServKey},
		{etcdCA, leaf{commonName: "muster-apiserver", usages: client},
			files.MusterEtcdClientCert, files.MusterEtcdClntKey},
	}
	for _, is := range issues {
		if err := is.ca.issue(is.spec, is.cert, is.key); err != nil {
			return nil, err
		}
	}

	if err := writeServiceAccountKeys(files.ServiceAccountKey, files.ServiceAccountPub); err != nil {
		return nil, err
	}
	return files, nil
}

// serviceAccountUser is the user name kube-apiserver gives a service account.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// newAuthority creates a self-signed CA and writes its certificate (and,
// when keyPath is set, its key).
func newAuthority(name, certPath, keyPath string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key for CA %s: %w", name, err)
	}
	caCert, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name, NotBefore: time.Now().Add(-time.Hour)}, key)
	if err != nil {
		return nil, fmt.Errorf("self-signing CA %s: %w", name, err)
	}
	if err := writeCertAndKey(caCert, key, certPath, keyPath); err != nil {
		return nil, fmt.Errorf("writing CA %s: %w", name, err)
	}
	return &authority{cert: caCert, key: key}, nil
}

// issue signs a new leaf certificate and writes it with its key.
func (a *authority) issue(l leaf, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating key for %s: %w", l.commonName, err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64))
	if err != nil {
		return fmt.Errorf("generating serial for %s: %w", l.commonName, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: l.commonName, Organization: l.organization},
		DNSNames:     l.dnsNames,
		IPAddresses:  l.ips,
		NotBefore:    now.Add(-time.Hour).UTC(),
		NotAfter:     now.Add(certValidity).UTC(),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  l.usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return fmt.Errorf("signing certificate for %s: %w", l.commonName, err)
	}
	leafCert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("parsing certificate for %s: %w", l.commonName, err)
	}
	if err := writeCertAndKey(leafCert, key, certPath, keyPath); err != nil {
		return fmt.Errorf("writing certificate for %s: %w", l.commonName, err)
	}
	return nil
}

// writeServiceAccountKeys writes the key pair kube-apiserver signs and
// verifies service-account tokens with.
func writeServiceAccountKeys(keyPath, pubPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating service-account key: %w", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("encoding service-account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("encoding service-account public key: %w", err)
	}
	if err := keyutil.WriteKey(keyPath, keyPEM); err != nil {
		return fmt.Errorf("writing service-account key: %w", err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	if err := os.WriteFile(pubPath, pubPEM, 0o600); err != nil {
		return fmt.Errorf("writing service-account public key: %w", err)
	}
	return nil
}

// writeCertAndKey writes PEM files; an empty keyPath skips the key.
func writeCertAndKey(c *x509.Certificate, key crypto.Signer, certPath, keyPath string) error {
	certPEM, err := cert.EncodeCertificates(c)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		return err
	}
	if keyPath == "" {
		return nil
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	return keyutil.WriteKey(keyPath, keyPEM)
}

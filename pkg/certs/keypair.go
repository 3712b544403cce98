package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"net"
	"slices"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// KeyPair is a certificate with its private key, parsed and as PEM.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// parseKeyPair parses a PEM certificate and the PEM private key that goes
// with it, and checks that they do go together.
func parseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	c, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing private key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", k)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(c.PublicKey) {
		return nil, fmt.Errorf("private key does not match certificate %q", c.Subject.CommonName)
	}
	return &KeyPair{Cert: c, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// parseCert parses exactly one PEM certificate.
func parseCert(certPEM []byte) (*x509.Certificate, error) {
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate: %w", err)
	}
	if len(certs) != 1 {
		return nil, fmt.Errorf("want one certificate, found %d", len(certs))
	}
	return certs[0], nil
}

// newKey makes an ECDSA P-256 key with client-go's keyutil: small keys and
// fast handshakes, accepted by every Kubernetes client.
func newKey() (crypto.Signer, []byte, error) {
	keyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, nil, fmt.Errorf("making a private key: %w", err)
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the new private key: %w", err)
	}
	signer, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("keyutil made a %T, not an ECDSA key", k)
	}
	return signer, keyPEM, nil
}

// backdate is how far before now a certificate's validity starts, so that
// a verifier whose clock is a little behind ours accepts it at once: a
// twentieth of its lifetime, at most five minutes.
func backdate(lifetime time.Duration) time.Duration {
	return min(lifetime/20, 5*time.Minute)
}

// sign fills tmpl's serial number and validity and signs it with parent
// (itself when parent is nil). client-go's util/cert has no helper that
// signs a leaf with a given CA, and its self-signed CA helper fixes the
// lifetime at ten years, so the signing is crypto/x509's CreateCertificate
// on a filled template.
func sign(tmpl *x509.Certificate, key crypto.Signer, keyPEM []byte, parent *KeyPair, now time.Time, notAfter time.Time) (*KeyPair, error) {
	serial, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64))
	if err != nil {
		return nil, fmt.Errorf("making a serial number: %w", err)
	}
	tmpl.SerialNumber = new(big.Int).Add(serial, big.NewInt(1))
	tmpl.NotBefore = now.Add(-backdate(notAfter.Sub(now))).UTC()
	tmpl.NotAfter = notAfter.UTC()
	issuer, signer := tmpl, key
	if parent != nil {
		issuer, signer = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the new certificate: %w", err)
	}
	certPEM, err := cert.EncodeCertificates(c)
	if err != nil {
		return nil, fmt.Errorf("encoding the new certificate: %w", err)
	}
	return &KeyPair{Cert: c, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// newCA makes a self-signed CA valid for lifetime from now. Its name
// carries its time of creation, as kube-apiserver's self-signed CAs do, so
// that two CAs in one bundle are told apart.
func newCA(now time.Time, lifetime time.Duration) (*KeyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("muster-apiserver-ca@%d", now.Unix())},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, key, keyPEM, nil, now, now.Add(lifetime))
}

// newServing issues a serving certificate for names, signed by ca, valid
// for lifetime from now but never past ca's own end.
func newServing(now time.Time, lifetime time.Duration, ca *KeyPair, names Names) (*KeyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	cn := "muster-apiserver"
	if len(names.DNSNames) > 0 {
		cn = names.DNSNames[0]
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    slices.Clone(names.DNSNames),
		IPAddresses: slices.Clone(names.IPs),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	notAfter := now.Add(lifetime)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	return sign(tmpl, key, keyPEM, ca, now, notAfter)
}

// Names are the subject alternative names of the serving certificate.
type Names struct {
	DNSNames []string
	IPs      []net.IP
}

// matches reports whether c carries exactly these names.
func (n Names) matches(c *x509.Certificate) bool {
	if !slices.Equal(c.DNSNames, n.DNSNames) || len(c.IPAddresses) != len(n.IPs) {
		return false
	}
	for i := range n.IPs {
		if !c.IPAddresses[i].Equal(n.IPs[i]) {
			return false
		}
	}
	return true
}

// fingerprint names a certificate by the SHA-256 of its DER, for logs and
// for telling which CAs a published bundle holds.
func fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:8])
}

// bundleHolds reports whether the PEM bundle holds c.
func bundleHolds(bundle []byte, c *x509.Certificate) bool {
	certs, err := cert.ParseCertsPEM(bundle)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(certs, func(b *x509.Certificate) bool { return bytes.Equal(b.Raw, c.Raw) })
}

// fraction returns the instant at f of c's validity.
func fraction(c *x509.Certificate, f float64) time.Time {
	return c.NotBefore.Add(time.Duration(float64(c.NotAfter.Sub(c.NotBefore)) * f))
}

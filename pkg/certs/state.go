package certs

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"time"

	"k8s.io/client-go/util/cert"
)

// Keys of the Secret. tls.crt, tls.key and ca.crt are the names
// cert-manager and kubernetes.io/tls Secrets use, so tools that read those
// read this one too.
const (
	// ServingCertKey and ServingKeyKey hold the serving certificate and key.
	ServingCertKey = "tls.crt"
	ServingKeyKey  = "tls.key"
	// CACertKey and CAKeyKey hold the CA that signs serving certificates now.
	CACertKey = "ca.crt"
	CAKeyKey  = "ca.key"
	// NextCACertKey and NextCAKeyKey hold the CA that will replace it: it is
	// already in the bundle, but signs nothing yet.
	NextCACertKey = "next-ca.crt"
	NextCAKeyKey  = "next-ca.key"
	// PreviousCACertKey holds the CA that was replaced, without its key:
	// it stays in the bundle until it expires, so that certificates it
	// signed, which a replica may still serve, stay trusted.
	PreviousCACertKey = "previous-ca.crt"
	// BundleKey holds what is written into every caBundle: the previous,
	// current and next CAs, those that exist.
	BundleKey = "ca-bundle.crt"
)

// State is what the Secret holds, parsed. Any part may be missing.
type State struct {
	CA         *KeyPair
	NextCA     *KeyPair
	PreviousCA *x509.Certificate
	Serving    *KeyPair
}

// Load parses a Secret's data. A part that is missing or does not parse
// is left nil, and the reason is returned among the errors: Plan replaces
// what is missing, so a corrupt Secret heals itself.
func Load(data map[string][]byte) (*State, []error) {
	s := &State{}
	var errs []error
	pair := func(what, certKey, keyKey string) *KeyPair {
		if len(data[certKey]) == 0 && len(data[keyKey]) == 0 {
			return nil
		}
		kp, err := parseKeyPair(data[certKey], data[keyKey])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s, %s): %w", what, certKey, keyKey, err))
			return nil
		}
		return kp
	}
	s.CA = pair("CA", CACertKey, CAKeyKey)
	s.NextCA = pair("next CA", NextCACertKey, NextCAKeyKey)
	s.Serving = pair("serving certificate", ServingCertKey, ServingKeyKey)
	if len(data[PreviousCACertKey]) > 0 {
		c, err := parseCert(data[PreviousCACertKey])
		if err != nil {
			errs = append(errs, fmt.Errorf("previous CA (%s): %w", PreviousCACertKey, err))
		} else {
			s.PreviousCA = c
		}
	}
	if s.CA == nil && len(data[CACertKey]) > 0 {
		// The CA's key is lost, but its certificate may still be what
		// kube-apiserver trusts and what replicas serve: keep trusting it
		// while a new CA takes over.
		if c, err := parseCert(data[CACertKey]); err == nil && s.PreviousCA == nil {
			s.PreviousCA = c
		}
	}
	return s, errs
}

// Data encodes the state as a Secret's data, the bundle included.
func (s *State) Data() map[string][]byte {
	data := map[string][]byte{BundleKey: s.Bundle(time.Time{})}
	if s.CA != nil {
		data[CACertKey], data[CAKeyKey] = s.CA.CertPEM, s.CA.KeyPEM
	}
	if s.NextCA != nil {
		data[NextCACertKey], data[NextCAKeyKey] = s.NextCA.CertPEM, s.NextCA.KeyPEM
	}
	if s.PreviousCA != nil {
		data[PreviousCACertKey] = pemOf(s.PreviousCA)
	}
	if s.Serving != nil {
		data[ServingCertKey], data[ServingKeyKey] = s.Serving.CertPEM, s.Serving.KeyPEM
	}
	return data
}

// Bundle is the PEM of every CA to trust, oldest first: the previous CA,
// the current one and the next one. With a non-zero now, CAs expired by
// then are left out.
func (s *State) Bundle(now time.Time) []byte {
	var b bytes.Buffer
	add := func(c *x509.Certificate) {
		if c != nil && (now.IsZero() || now.Before(c.NotAfter)) {
			b.Write(pemOf(c))
		}
	}
	add(s.PreviousCA)
	if s.CA != nil {
		add(s.CA.Cert)
	}
	if s.NextCA != nil {
		add(s.NextCA.Cert)
	}
	return b.Bytes()
}

// pemOf encodes one certificate as PEM.
func pemOf(c *x509.Certificate) []byte {
	out, err := cert.EncodeCertificates(c)
	if err != nil {
		// Encoding a parsed certificate's DER as PEM cannot fail.
		panic(fmt.Sprintf("encoding certificate %q: %v", c.Subject.CommonName, err))
	}
	return out
}

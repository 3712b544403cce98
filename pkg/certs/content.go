package certs

import (
	"bytes"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// ServingContent is the serving certificate and key as the Secret holds
// them now. It is a dynamiccertificates.CertKeyContentProvider: the generic
// API server's TLS config and the webhook listener read it on each
// handshake, so a rotated certificate is served without a restart.
type ServingContent struct {
	mu        sync.RWMutex
	cert, key []byte
	listeners []dynamiccertificates.Listener
}

var _ dynamiccertificates.CertKeyContentProvider = &ServingContent{}

// Name names the provider in the generic server's logs.
func (c *ServingContent) Name() string { return "muster-managed-serving-cert" }

// CurrentCertKeyContent returns the certificate and key served now.
func (c *ServingContent) CurrentCertKeyContent() ([]byte, []byte) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cert, c.key
}

// AddListener registers a listener told of every change.
func (c *ServingContent) AddListener(l dynamiccertificates.Listener) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listeners = append(c.listeners, l)
}

// set serves kp from now on, and reports whether it changed anything.
func (c *ServingContent) set(kp *KeyPair) bool {
	c.mu.Lock()
	if bytes.Equal(c.cert, kp.CertPEM) && bytes.Equal(c.key, kp.KeyPEM) {
		c.mu.Unlock()
		return false
	}
	c.cert, c.key = kp.CertPEM, kp.KeyPEM
	listeners := append([]dynamiccertificates.Listener(nil), c.listeners...)
	c.mu.Unlock()
	for _, l := range listeners {
		l.Enqueue()
	}
	return true
}

// loaded reports whether a certificate is served.
func (c *ServingContent) loaded() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.cert) > 0
}

package visibility

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
)

// A replica finds the leader in the controller's Lease: each candidate's
// identity is <host>_<peer address>_<uuid> (Identity), so the holder's
// says where to reach it. It forwards over TLS, verifying the leader's
// serving certificate for the Service's name against Muster's CA, as
// kube-apiserver verifies Muster, and authenticates as itself, with the
// credentials it has for kube-apiserver: the leader authenticates and
// authorizes it as any caller (TokenReview, SubjectAccessReview), and the
// chart grants Muster's ServiceAccount create on whatifreviews and list on
// pendingpodgroups. The forwarding replica then redacts the answer for its
// own caller.

// Identity is the Lease identity of a candidate reachable at address.
func Identity(host, address, uuid string) string {
	return host + "_" + address + "_" + uuid
}

// addressOf is the peer address in a Lease identity, "" for an identity
// of another form (a replica of an older Muster).
func addressOf(identity string) string {
	parts := strings.Split(identity, "_")
	if len(parts) < 3 {
		return ""
	}
	return parts[len(parts)-2]
}

// PeerConfig is how a replica reaches the leader.
type PeerConfig struct {
	// Holder returns the Lease's holder identity as this replica last
	// observed it, "" when it has seen none.
	Holder func() string
	// Self is this replica's own identity.
	Self string
	// Trust returns the CA bundle the leader's serving certificate
	// chains to; nil when there is none to trust, and nothing is
	// forwarded.
	Trust func() []byte
	// ServerName is the name the leader's certificate is verified for:
	// the Service's, <name>.<namespace>.svc.
	ServerName string
	// Credentials is this replica's config for kube-apiserver, whose
	// credentials (token, token file, client certificate) it presents.
	Credentials *rest.Config
}

// NewPeers returns the Peers of cfg.
func NewPeers(cfg PeerConfig) Peers { return &peers{cfg: cfg} }

type peers struct {
	cfg PeerConfig

	mu sync.Mutex
	// last is the client of the last leader, kept while its address and
	// the trust bundle stay the same: one connection pool, not one per
	// request.
	last     *peerClient
	lastAddr string
	lastCA   []byte
}

func (p *peers) Leader() (Client, error) {
	holder := p.cfg.Holder()
	switch {
	case holder == "":
		return nil, fmt.Errorf("no replica leads yet: retry")
	case holder == p.cfg.Self:
		return nil, fmt.Errorf("this replica leads, but its controller has not started yet: retry")
	}
	addr := addressOf(holder)
	if addr == "" {
		return nil, fmt.Errorf("the leader (%s) gives no address to forward to: it runs a Muster that serves no what-if", holder)
	}
	ca := p.cfg.Trust()
	if len(ca) == 0 {
		return nil, fmt.Errorf("this replica has no CA to verify the leader with (--peer-ca-file)")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != nil && p.lastAddr == addr && bytes.Equal(p.lastCA, ca) {
		return p.last, nil
	}
	c, err := newPeerClient(p.cfg, addr, ca)
	if err != nil {
		return nil, err
	}
	p.last, p.lastAddr, p.lastCA = c, addr, ca
	return c, nil
}

// peerClient is the leader's API.
type peerClient struct{ cs versioned.Interface }

// peerTimeout bounds a forwarded request: a what-if takes milliseconds.
const peerTimeout = 10 * time.Second

func newPeerClient(cfg PeerConfig, addr string, ca []byte) (*peerClient, error) {
	c := &rest.Config{
		Host:            "https://" + addr,
		BearerToken:     cfg.Credentials.BearerToken,
		BearerTokenFile: cfg.Credentials.BearerTokenFile,
		ExecProvider:    cfg.Credentials.ExecProvider,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:     ca,
			ServerName: cfg.ServerName,
			CertFile:   cfg.Credentials.CertFile,
			KeyFile:    cfg.Credentials.KeyFile,
			CertData:   cfg.Credentials.CertData,
			KeyData:    cfg.Credentials.KeyData,
		},
		UserAgent: "muster-apiserver/forward",
		Timeout:   peerTimeout,
		QPS:       -1, // the leader's own limits apply, as to any caller
	}
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return forwardingRoundTripper{rt} })
	cs, err := versioned.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("client of the leader at %s: %w", addr, err)
	}
	return &peerClient{cs: cs}, nil
}

func (c *peerClient) Review(ctx context.Context, namespace string, spec *v1alpha1.WhatIfReviewSpec) (*v1alpha1.WhatIfReviewStatus, error) {
	r, err := c.cs.SchedulingV1alpha1().WhatIfReviews(namespace).Create(ctx,
		&v1alpha1.WhatIfReview{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}, Spec: *spec}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return &r.Status, nil
}

func (c *peerClient) Queue(ctx context.Context, namespace string) ([]v1alpha1.PendingPodGroup, error) {
	l, err := c.cs.SchedulingV1alpha1().PendingPodGroups(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// forwardingRoundTripper marks a forwarded request (ForwardedHeader).
type forwardingRoundTripper struct{ rt http.RoundTripper }

func (f forwardingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(ForwardedHeader, "true")
	return f.rt.RoundTrip(r)
}

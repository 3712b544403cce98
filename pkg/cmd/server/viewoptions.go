package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/apiserver"
	"github.com/muster-dev/muster/pkg/registry/scheduling/whatifreview"
	"github.com/muster-dev/muster/pkg/visibility"
)

// ViewOptions configure the API's views of admission, whatifreviews and
// pendingpodgroups (pkg/visibility), and how a replica that does not lead
// reaches the leader for them. The peer flags are kube-apiserver's own
// (KEP-4020, its peer proxy).
type ViewOptions struct {
	// PeerAdvertiseIP and PeerAdvertisePort are where the other replicas
	// reach this one; empty and 0 take the address the secure port serves
	// on (the pod's IP when it binds every address) and its port.
	PeerAdvertiseIP   string
	PeerAdvertisePort int
	// PeerCAFile is the CA bundle the leader's serving certificate is
	// verified with; empty uses Muster's own CAs with
	// --cert-management=internal.
	PeerCAFile string
	// WhatIfQPS and WhatIfBurst bound each caller's reviews.
	WhatIfQPS   float64
	WhatIfBurst int

	service *visibility.Service
	self    string
}

// NewViewOptions returns the defaults.
func NewViewOptions() *ViewOptions {
	// A person at a terminal asks a few a second at most; a tool that
	// asks before each submission of a few a second stays under it.
	return &ViewOptions{WhatIfQPS: 5, WhatIfBurst: 20}
}

// AddFlags adds the view flags.
func (o *ViewOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PeerAdvertiseIP, "peer-advertise-ip", o.PeerAdvertiseIP,
		"IP the other replicas forward what-if and queue requests to when this replica leads. Defaults to the secure port's address (the pod's IP when --bind-address is 0.0.0.0).")
	fs.IntVar(&o.PeerAdvertisePort, "peer-advertise-port", o.PeerAdvertisePort,
		"Port the other replicas forward to when this replica leads. Defaults to --secure-port.")
	fs.StringVar(&o.PeerCAFile, "peer-ca-file", o.PeerCAFile,
		"CA bundle the leader's serving certificate is verified with when a replica forwards to it. Defaults to Muster's own CAs with --cert-management=internal.")
	fs.Float64Var(&o.WhatIfQPS, "whatif-qps", o.WhatIfQPS, "WhatIfReviews a second each caller may create; past it, 429 with Retry-After. 0 limits nothing.")
	fs.IntVar(&o.WhatIfBurst, "whatif-burst", o.WhatIfBurst, "WhatIfReviews each caller may create at once.")
}

// Validate checks the options.
func (o *ViewOptions) Validate() []error {
	var errs []error
	if o.PeerAdvertiseIP != "" && net.ParseIP(o.PeerAdvertiseIP) == nil {
		errs = append(errs, fmt.Errorf("--peer-advertise-ip %q is not an IP address", o.PeerAdvertiseIP))
	}
	if o.PeerAdvertisePort < 0 || o.PeerAdvertisePort > 65535 {
		errs = append(errs, fmt.Errorf("--peer-advertise-port %d is not a port", o.PeerAdvertisePort))
	}
	if o.WhatIfQPS < 0 || o.WhatIfBurst < 1 {
		errs = append(errs, fmt.Errorf("--whatif-qps must be at least 0 and --whatif-burst at least 1"))
	}
	return errs
}

// peerAddress is this replica's address for the other replicas.
func (o *Options) peerAddress() (string, error) {
	ip := o.Views.PeerAdvertiseIP
	// A server bound to one address (loopback included, where replicas
	// share a host) is reached there; one bound to all at the address of
	// its default route, the pod's IP.
	if bind := o.RecommendedOptions.SecureServing.BindAddress; ip == "" && bind != nil && !bind.IsUnspecified() {
		ip = bind.String()
	}
	if ip == "" {
		addr, err := o.RecommendedOptions.SecureServing.DefaultExternalAddress()
		if err != nil {
			return "", fmt.Errorf("finding the address to advertise to the other replicas (set --peer-advertise-ip): %w", err)
		}
		ip = addr.String()
	}
	port := o.Views.PeerAdvertisePort
	if port == 0 {
		port = o.RecommendedOptions.SecureServing.BindPort
	}
	return net.JoinHostPort(ip, strconv.Itoa(port)), nil
}

// views builds the service behind whatifreviews and pendingpodgroups, and
// the controller's Lease identity that tells the other replicas where
// this one is.
func (o *Options) views(kubeConfig *rest.Config, authz authorizer.Authorizer) (*apiserver.Views, error) {
	addr, err := o.peerAddress()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	o.Views.self = visibility.Identity(host, addr, o.Controller.uuid)
	o.Controller.identity = o.Views.self
	svcNamespace, svcName, err := splitRef(o.Certs.Service)
	if err != nil {
		return nil, fmt.Errorf("--cert-service: %w", err)
	}
	peers := visibility.NewPeers(visibility.PeerConfig{
		Holder:      o.Controller.leaseHolder,
		Self:        o.Views.self,
		Trust:       o.peerTrust,
		ServerName:  svcName + "." + svcNamespace + ".svc",
		Credentials: kubeConfig,
	})
	o.Views.service = visibility.NewService(peers, authz)
	limiter := whatifreview.NewLimiter(o.Views.WhatIfQPS, o.Views.WhatIfBurst)
	limiter.Exempt = selfName(kubeConfig)
	return &apiserver.Views{
		Reviews: o.Views.service,
		Limiter: limiter,
		Queue:   o.Views.service,
		Filter:  visibility.WithForwarded,
	}, nil
}

// peerTrust is the CA bundle a forwarded request verifies the leader with.
func (o *Options) peerTrust() []byte {
	if f := o.Views.PeerCAFile; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil
		}
		return b
	}
	if o.Certs.manager != nil {
		return o.Certs.manager.Trust()
	}
	return nil
}

// selfName returns this server's own user name, as kube-apiserver
// authenticates its credentials, "" until it is known: a SelfSubjectReview,
// asked in the background from the first call on, every 10 s until one
// succeeds. No request waits for it; until it is known, the leader limits
// forwarded reviews as any caller's.
func selfName(kubeConfig *rest.Config) func() string {
	var (
		once sync.Once
		name atomic.Pointer[string]
	)
	ask := func() {
		kube, err := kubernetes.NewForConfig(kubeConfig)
		if err != nil {
			return
		}
		_ = wait.PollUntilContextCancel(context.Background(), 10*time.Second, true, func(ctx context.Context) (bool, error) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil || r.Status.UserInfo.Username == "" {
				return false, nil
			}
			n := r.Status.UserInfo.Username
			name.Store(&n)
			return true, nil
		})
	}
	return func() string {
		once.Do(func() { go ask() })
		if n := name.Load(); n != nil {
			return *n
		}
		return ""
	}
}

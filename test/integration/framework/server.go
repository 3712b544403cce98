// Package framework starts muster-apiserver inside a test process, on an
// embedded etcd and a free loopback port, and stops it when the test ends.
package framework

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/muster-dev/muster/pkg/cmd/server"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
)

// Server is a running muster-apiserver.
type Server struct {
	// Config reaches the server over TLS verified against its CA, as kubectl
	// would with the kubeconfig that standalone mode writes.
	Config *rest.Config
	// Client is the generated typed clientset.
	Client versioned.Interface
	// Kubeconfig is the path of the kubeconfig the server wrote.
	Kubeconfig string
	// WebhookURL is the pod webhook's own listener, https://127.0.0.1:<port>,
	// served with the same certificate as Config's host.
	WebhookURL string
}

// Options tune StartServerWith.
type Options struct {
	// EmbeddedEtcd leaves --etcd-servers empty, so that the server starts
	// its own embedded etcd under DataDir, as it does in production.
	EmbeddedEtcd bool
	// DataDir is --data-dir; empty means a fresh temporary directory.
	DataDir string
}

// StartServer runs muster-apiserver in standalone mode against a fresh etcd.
// Everything it starts is stopped by t.Cleanup.
func StartServer(t testing.TB) *Server {
	return StartServerWith(t, Options{})
}

// StartServerWith is StartServer with options.
func StartServerWith(t testing.TB, opts Options) *Server {
	t.Helper()
	var etcdServers []string
	if !opts.EmbeddedEtcd {
		etcdCfg := testserver.NewTestConfig(t)
		testserver.RunEtcd(t, etcdCfg)
		etcdServers = []string{etcdCfg.ListenClientUrls[0].String()}
	}

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	webhookListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	dir := opts.DataDir
	if dir == "" {
		dir = t.TempDir()
	}
	o := server.NewOptions()
	o.Standalone = true
	o.DataDir = dir
	o.StandaloneKubeconfig = filepath.Join(dir, "kubeconfig")
	o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = etcdServers
	o.RecommendedOptions.SecureServing.Listener = listener
	o.RecommendedOptions.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	o.Webhook.Listener = webhookListener
	// A kubeconfig left by an earlier run names an old port.
	if err := os.Remove(o.StandaloneKubeconfig); err != nil && !os.IsNotExist(err) {
		t.Fatalf("removing old kubeconfig: %v", err)
	}
	if err := o.Complete(nil); err != nil {
		t.Fatalf("completing options: %v", err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("validating options: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- server.Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-stopped:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("server stopped with error: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("server did not stop within a minute")
		}
	})

	s := &Server{Kubeconfig: o.StandaloneKubeconfig, WebhookURL: "https://" + webhookListener.Addr().String()}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-stopped:
			return false, errors.Join(errors.New("server exited while starting"), err)
		default:
		}
		if s.Config == nil {
			cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
			if err != nil {
				return false, nil // not written yet
			}
			s.Config = cfg
		}
		rc, err := rest.RESTClientFor(withCodec(s.Config))
		if err != nil {
			return false, err
		}
		body, err := rc.Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
	if err != nil {
		t.Fatalf("waiting for muster-apiserver to be ready: %v", err)
	}
	s.Client, err = versioned.NewForConfig(s.Config)
	if err != nil {
		t.Fatalf("creating clientset: %v", err)
	}
	return s
}

package server

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"
)

// pickEmbeddedEtcdURL reserves a free loopback port for the embedded etcd's
// client URL. The embedded etcd never listens beyond loopback.
func pickEmbeddedEtcdURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port for the embedded etcd: %w", err)
	}
	defer l.Close()
	return "http://" + l.Addr().String(), nil
}

// startEmbeddedEtcd runs a single-member etcd under dataDir, serving clients
// on clientURL, until ctx ends. It returns once etcd is ready.
func startEmbeddedEtcd(ctx context.Context, dataDir, clientURL string) (stopped <-chan struct{}, err error) {
	logger := klog.FromContext(ctx)
	client, err := url.Parse(clientURL)
	if err != nil {
		return nil, fmt.Errorf("parsing embedded etcd URL: %w", err)
	}
	peerURL, err := pickEmbeddedEtcdURL()
	if err != nil {
		return nil, err
	}
	peer, _ := url.Parse(peerURL)

	cfg := embed.NewConfig()
	cfg.Name = "muster"
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"stderr"}

	logger.Info("No --etcd-servers given: starting an embedded etcd", "dataDir", dataDir, "clientURL", clientURL)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", dataDir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s was not ready within a minute", dataDir)
	}
	logger.Info("Embedded etcd is ready", "dataDir", dataDir)

	done := make(chan struct{})
	go func() {
		<-ctx.Done()
		e.Close()
		close(done)
	}()
	return done, nil
}

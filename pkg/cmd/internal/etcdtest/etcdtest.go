// Package etcdtest runs a real, single-member etcd on loopback for the
// tests of the backup and restore commands.
package etcdtest

import (
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Member is a member's identity: the name and peer URL a restore must
// repeat.
type Member struct {
	Name    string
	PeerURL url.URL
}

// NewMember picks a free loopback peer port for a member called name.
func NewMember(t *testing.T, name string) Member {
	return Member{Name: name, PeerURL: FreeURL(t)}
}

// InitialCluster is the member's --initial-cluster, as a cluster of one.
func (m Member) InitialCluster() string { return m.Name + "=" + m.PeerURL.String() }

// Start runs m on dataDir until the test ends, or stop is called, and
// returns its client URL. dataDir may hold a restored member's data.
func Start(t *testing.T, m Member, dataDir string) (clientURL string, stop func()) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = dataDir
	client := FreeURL(t)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{m.PeerURL}, []url.URL{m.PeerURL}
	cfg.InitialCluster = m.InitialCluster()
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("starting etcd on %s: %v", dataDir, err)
	}
	var once sync.Once
	stop = func() { once.Do(e.Close) }
	t.Cleanup(stop)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd on %s failed: %v", dataDir, err)
	case <-time.After(time.Minute):
		t.Fatalf("etcd on %s was not ready within a minute", dataDir)
	}
	return client.String(), stop
}

// FreeURL is http://127.0.0.1:<a port free now>.
func FreeURL(t *testing.T) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

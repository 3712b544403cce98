package apiserver

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/test/integration/framework"
)

// TestEmbeddedEtcd starts the server with no --etcd-servers: it must run its
// own etcd under --data-dir, and what it stores must survive a restart.
func TestEmbeddedEtcd(t *testing.T) {
	ctx := testContext(t)
	dataDir := t.TempDir()

	t.Run("first run stores a PodGroup", func(t *testing.T) {
		s := framework.StartServerWith(t, framework.Options{EmbeddedEtcd: true, DataDir: dataDir})
		if _, err := s.Client.SchedulingV1alpha1().PodGroups(ns).Create(ctx, gangGroup("kept", 2), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
	})
	if _, err := os.Stat(filepath.Join(dataDir, "member")); err != nil {
		t.Fatalf("embedded etcd left no data under --data-dir: %v", err)
	}
	t.Run("second run reads it back", func(t *testing.T) {
		s := framework.StartServerWith(t, framework.Options{EmbeddedEtcd: true, DataDir: dataDir})
		if _, err := s.Client.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "kept", metav1.GetOptions{}); err != nil {
			t.Fatalf("get after restart: %v", err)
		}
	})
}

package manifests

import (
	"path/filepath"
	"testing"

	"github.com/muster-dev/muster/pkg/importgraph"
)

// TestImportsNeitherControllerNorWebhook keeps this package below the
// controller and the webhook: the test harness and the tools install what
// it builds without linking either, and either may import it. It follows
// the module's own imports from here, as the build does.
func TestImportsNeitherControllerNorWebhook(t *testing.T) {
	reached, err := importgraph.Reach(filepath.Join("..", ".."), importgraph.Module+"pkg/manifests")
	if err != nil {
		t.Fatal(err)
	}
	for path, from := range reached {
		for _, dir := range []string{"pkg/controller", "pkg/webhook"} {
			if importgraph.Under(path, dir) {
				t.Errorf("%s imports %s", from, path)
			}
		}
	}
	if len(reached) < 2 {
		t.Fatalf("followed %d packages; the walk found none of the module's imports", len(reached))
	}
}

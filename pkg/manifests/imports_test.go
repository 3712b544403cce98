package manifests

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportsNeitherControllerNorWebhook keeps this package below the
// controller and the webhook: the test harness and the tools install what
// it builds without linking either, and either may import it. It follows
// the module's own imports from here, as the build does.
func TestImportsNeitherControllerNorWebhook(t *testing.T) {
	const module = "github.com/muster-dev/muster/"
	forbidden := []string{module + "pkg/controller/", module + "pkg/webhook/"}
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	var walk func(path, from string)
	walk = func(path, from string) {
		if seen[path] {
			return
		}
		seen[path] = true
		for _, f := range forbidden {
			if strings.HasPrefix(path+"/", f) {
				t.Errorf("%s imports %s", from, path)
			}
		}
		pkg, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(path, module))), 0)
		if err != nil {
			t.Fatalf("reading package %s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			if strings.HasPrefix(imp, module) {
				walk(imp, path)
			}
		}
	}
	walk(module+"pkg/manifests", "")
	if len(seen) < 2 {
		t.Fatalf("followed %d packages; the walk found none of the module's imports", len(seen))
	}
}

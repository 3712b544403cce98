package capacityadmission

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoesNotImportPodGroup checks the seam between the
// controller and this mode: the mode decides and the controller writes,
// so nothing here, nor anything it imports from the module, reaches back
// into pkg/controller/podgroup.
func TestDoesNotImportPodGroup(t *testing.T) {
	const module = "github.com/muster-dev/muster/"
	forbidden := module + "pkg/controller/podgroup"
	root := filepath.Join("..", "..", "..")
	seen := map[string]bool{}
	var walk func(path, from string)
	walk = func(path, from string) {
		if seen[path] {
			return
		}
		seen[path] = true
		if path == forbidden || strings.HasPrefix(path, forbidden+"/") {
			t.Errorf("%s imports %s", from, path)
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
	walk(module+"pkg/controller/capacityadmission", "")
	if !seen[module+"pkg/controller/admission"] || !seen[module+"pkg/controller/capacity"] {
		t.Fatalf("followed %d packages, not the mode's own imports: the walk is broken", len(seen))
	}
}

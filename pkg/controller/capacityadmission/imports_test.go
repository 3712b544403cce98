package capacityadmission

import (
	"path/filepath"
	"testing"

	"github.com/muster-dev/muster/pkg/importgraph"
)

// TestDoesNotImportPodGroup checks the seam between the controller and
// this mode: the mode decides and the controller writes, so nothing here,
// nor anything it imports from the module, reaches back into
// pkg/controller/podgroup.
func TestDoesNotImportPodGroup(t *testing.T) {
	reached, err := importgraph.Reach(filepath.Join("..", "..", ".."), importgraph.Module+"pkg/controller/capacityadmission")
	if err != nil {
		t.Fatal(err)
	}
	for path, from := range reached {
		if importgraph.Under(path, "pkg/controller/podgroup") {
			t.Errorf("%s imports %s", from, path)
		}
	}
	for _, own := range []string{"pkg/controller/admission", "pkg/controller/capacity"} {
		if _, ok := reached[importgraph.Module+own]; !ok {
			t.Fatalf("followed %d packages, not the mode's own import %s: the walk is broken", len(reached), own)
		}
	}
}

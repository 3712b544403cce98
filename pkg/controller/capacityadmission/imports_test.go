package capacityadmission

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
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

// TestRecordsNoEvents checks that the mode says nothing on a PodGroup
// itself: what it did outside a sync goes to the controller through
// admission.Announce, and its decisions carry their events, so the mode's
// own files never import the event recorder.
func TestRecordsNoEvents(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	read := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		read++
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "k8s.io/client-go/tools/record" {
				t.Errorf("%s imports %s: announce through admission.Announce instead", name, path)
			}
		}
	}
	if read == 0 {
		t.Fatal("read no file of the mode")
	}
}

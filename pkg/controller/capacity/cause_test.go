package capacity

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpeaksNoPodGroupReasons checks that capacity knows nothing of
// PodGroups' conditions: no file of it (tests aside) names a reason of the
// API, which the admission mode maps from a Cause, nor imports the API's
// versioned types.
func TestSpeaksNoPodGroupReasons(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatalf("parsing %s: %v", name, err)
		}
		read++
		for _, imp := range f.Imports {
			if strings.Contains(imp.Path.Value, "/pkg/apis/scheduling/v1alpha1") {
				t.Errorf("%s imports %s", name, imp.Path.Value)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "scheduling" && strings.HasPrefix(sel.Sel.Name, "Reason") {
				t.Errorf("%s names scheduling.%s; return a Cause instead", name, sel.Sel.Name)
			}
			return true
		})
	}
	if read == 0 {
		t.Fatal("read no file of the package")
	}
}

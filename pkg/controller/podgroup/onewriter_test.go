package podgroup

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// admissionWriter is the one file of this package that writes an admission
// decision into a group's status (docs/controller.md, step 6): every other
// file decides, and hands it what it decided.
const admissionWriter = "decision.go"

// TestOneWriterOfAdmission checks that no file but decision.go writes what
// records admission: the Admitted and Preempted conditions, admissionTime
// and status.preemption. A check that set them itself would be a file that
// both decides admission and writes status.
func TestOneWriterOfAdmission(t *testing.T) {
	fset, files := parsePackage(t)
	writes := map[string]int{}
	for name, f := range files {
		for _, w := range admissionWrites(f) {
			writes[name]++
			if name != admissionWriter {
				t.Errorf("%s: %s writes admission into status; only %s may (return what was decided instead)", fset.Position(w.Pos()), nodeString(w), admissionWriter)
			}
		}
	}
	// The check must see the writes where they are, or it proves nothing.
	if writes[admissionWriter] == 0 {
		t.Fatalf("found no admission write in %s: the check is looking for the wrong thing", admissionWriter)
	}
}

// admissionWrites are the statements of f that set an admission condition,
// or assign admissionTime or status.preemption.
func admissionWrites(f *ast.File) []ast.Node {
	var out []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if !conditionSetter(n.Fun) {
				return true
			}
			for _, arg := range n.Args {
				if sel, ok := arg.(*ast.SelectorExpr); ok && (sel.Sel.Name == "ConditionAdmitted" || sel.Sel.Name == "ConditionPreempted") {
					out = append(out, n)
				}
			}
		case *ast.AssignStmt:
			for _, lhs := range n.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && (sel.Sel.Name == "AdmissionTime" || sel.Sel.Name == "Preemption") {
					out = append(out, n)
				}
			}
		}
		return true
	})
	return out
}

// conditionSetter reports whether fun changes a condition list: this
// package's setCondition, or apimachinery's meta helpers that do.
func conditionSetter(fun ast.Expr) bool {
	switch fun := fun.(type) {
	case *ast.Ident:
		return fun.Name == "setCondition"
	case *ast.SelectorExpr:
		return fun.Sel.Name == "SetStatusCondition" || fun.Sel.Name == "RemoveStatusCondition"
	}
	return false
}

// nodeString names a write for the error: the called function or the
// assigned field.
func nodeString(n ast.Node) string {
	switch n := n.(type) {
	case *ast.CallExpr:
		if id, ok := n.Fun.(*ast.Ident); ok {
			return id.Name
		}
		if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
			return sel.Sel.Name
		}
	case *ast.AssignStmt:
		if sel, ok := n.Lhs[0].(*ast.SelectorExpr); ok {
			return "assigning " + sel.Sel.Name
		}
	}
	return "a statement"
}

// parsePackage parses this package's files, tests left out, by name.
func parsePackage(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	return fset, files
}

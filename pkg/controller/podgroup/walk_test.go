package podgroup

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// walkExceptions are the files a group's sync may enter more than once,
// each with the reason docs/controller.md ("Walking one sync") gives.
var walkExceptions = map[string]string{
	"sync.go":   "the walk itself",
	"status.go": "the vocabulary of status that every step reads",
	"write.go":  "the two status writes, steps 8 and 13, are one function",
}

// TestSyncWalksEachFileOnce checks issue 31's walk-once property on
// syncGroup, the path of a group that exists, is managed and is not being
// deleted: its step calls enter each file once, but for walkExceptions,
// and name the steps in the order docs/controller.md gives them. A step's
// own helpers are the step's business; the group's memory (c.memory), the
// admission mode (c.admitter), the recorder, the metrics and the sync's
// podView are stores and sinks, not steps; and error branches (if err !=
// nil) leave the walk, as the docs say where.
func TestSyncWalksEachFileOnce(t *testing.T) {
	declaredIn := map[string]string{} // function or method name -> file
	var syncGroup *ast.FuncDecl
	_, files := parsePackage(t)
	for name, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				declaredIn[fd.Name.Name] = name
				if fd.Name.Name == "syncGroup" {
					syncGroup = fd
				}
			}
		}
	}
	if syncGroup == nil {
		t.Fatal("no syncGroup in this package")
	}
	steps := stepCalls(syncGroup.Body, declaredIn)
	if len(steps) < 10 {
		t.Fatalf("found only %d step calls in syncGroup: %v; the walk is misread", len(steps), steps)
	}

	// Each file once, in one run of calls, but for the exceptions.
	var runs []string
	for _, s := range steps {
		if f := declaredIn[s]; len(runs) == 0 || runs[len(runs)-1] != f {
			runs = append(runs, f)
		}
	}
	seen := map[string]bool{}
	for _, f := range runs {
		if seen[f] && walkExceptions[f] == "" {
			t.Errorf("syncGroup enters %s twice (walk: %s); merge the steps, or name the file and why in walkExceptions and docs/controller.md", f, strings.Join(runs, " -> "))
		}
		seen[f] = true
	}

	// The docs name each step, beside its file, in this order.
	docs, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "controller.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := sectionOf(string(docs), "## One sync, step by step")
	for f, why := range walkExceptions {
		if !strings.Contains(section, "`"+f+"`") || !strings.Contains(section, why) {
			t.Errorf("docs/controller.md, \"Walking one sync\", must name %s and why it is entered more than once (%q)", f, why)
		}
	}
	// **name**, then within a few words the parenthesis naming its file:
	// "**writeStatus**, the first status write (`write.go`)".
	named := regexp.MustCompile("\\*\\*([A-Za-z]+)\\*\\*[^(*]{0,40}\\(`(?:[A-Za-z.]+, `)?([a-z]+\\.go)`")
	var order []string
	for _, m := range named.FindAllStringSubmatch(section, -1) {
		order = append(order, m[1]+" "+m[2])
	}
	at := 0
	for _, s := range steps {
		if walkExceptions[declaredIn[s]] != "" && declaredIn[s] != "write.go" {
			continue
		}
		i := indexFrom(order, s+" "+declaredIn[s], at)
		if i < 0 {
			t.Errorf("step %s (%s) is not named in docs/controller.md's \"One sync, step by step\" after %s, as **%s** (`%s`)", s, declaredIn[s], prev(order, at), s, declaredIn[s])
			continue
		}
		at = i + 1
	}
}

// stepCalls are the package's functions that body calls, in source order,
// leaving out error branches and calls on stores and sinks.
func stepCalls(body *ast.BlockStmt, declaredIn map[string]string) []string {
	var out []string
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt:
			if isErrCheck(n.Cond) {
				return false
			}
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			var name string
			switch fun := n.Fun.(type) {
			case *ast.Ident:
				name = fun.Name
			case *ast.SelectorExpr:
				// c.step(...) only: c.memory.x, view.y and the like are stores.
				if recv, ok := fun.X.(*ast.Ident); ok && recv.Name == "c" {
					name = fun.Sel.Name
				}
			}
			if _, ours := declaredIn[name]; ours {
				out = append(out, name)
			}
		}
		return true
	})
	return out
}

// isErrCheck reports whether cond is err != nil.
func isErrCheck(cond ast.Expr) bool {
	b, ok := cond.(*ast.BinaryExpr)
	if !ok || b.Op != token.NEQ {
		return false
	}
	x, ok1 := b.X.(*ast.Ident)
	y, ok2 := b.Y.(*ast.Ident)
	return ok1 && ok2 && strings.HasSuffix(x.Name, "err") && y.Name == "nil"
}

// sectionOf is the text of the docs' section whose heading is heading, up
// to the next heading of its level.
func sectionOf(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func indexFrom(list []string, s string, from int) int {
	for i := from; i < len(list); i++ {
		if list[i] == s {
			return i
		}
	}
	return -1
}

func prev(order []string, at int) string {
	if at == 0 {
		return "the start"
	}
	return order[at-1]
}

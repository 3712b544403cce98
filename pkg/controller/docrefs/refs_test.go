// Package docrefs holds only tests: they check that the functions, methods
// and types docs/controller.md and docs/architecture.md name exist in the
// files the docs name beside them, so that the docs cannot drift from the
// code unnoticed.
package docrefs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// ref is one name a doc places in a file: "**classifyPods** (`classify.go`)",
// "(`groupMemories.load`, `memory.go`)" or "`decisions` in `status.go`".
type ref struct {
	line  int
	name  string
	files []string
}

var (
	// goFile is a backticked Go file, bare or with some of its path.
	goFile = regexp.MustCompile("`([A-Za-z0-9_./-]+\\.go)`")
	// identTick and identBold are a name in backticks or in bold: a Go
	// identifier, or two joined by a dot (Type.method, package.Name).
	identTick = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)`")
	identBold = regexp.MustCompile(`\*\*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\*\*`)
	// nameBefore is a name right before an opening parenthesis.
	nameBefore = regexp.MustCompile("(?:\\*\\*([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)\\*\\*|`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)`)\\s*$")
	// nameIn is "`name` in `file.go`".
	nameIn = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)` in `([A-Za-z0-9_./-]+\\.go)`")
)

// findRefs returns the references of a Markdown doc. A parenthesis that
// names Go files is a reference: the names inside it (in backticks or in
// bold) are checked against its files; if it holds none, the name in bold
// right before it is, or the one in backticks if the parenthesis holds
// nothing but one file. A name before a parenthesis that holds
// names of its own is a step's name ("**settle** (`groupMemories.load`,
// `memory.go`)"), not a Go name. Fenced code blocks are skipped.
func findRefs(doc string) []ref {
	text := blankFences(doc)
	lineAt := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	var refs []ref
	for open := 0; open < len(text); open++ {
		if text[open] != '(' {
			continue
		}
		end := closing(text, open)
		if end < 0 {
			continue
		}
		inner := text[open+1 : end]
		var files []string
		for _, m := range goFile.FindAllStringSubmatch(inner, -1) {
			files = append(files, m[1])
		}
		if len(files) == 0 {
			continue
		}
		var names []ref
		for _, re := range []*regexp.Regexp{identTick, identBold} {
			for _, m := range re.FindAllStringSubmatchIndex(inner, -1) {
				if name := inner[m[2]:m[3]]; !strings.HasSuffix(name, ".go") {
					names = append(names, ref{line: lineAt(open + 1 + m[2]), name: name, files: files})
				}
			}
		}
		if len(names) == 0 {
			if m := nameBefore.FindStringSubmatchIndex(text[:open]); m != nil {
				at, end := m[2], m[3]
				// A name in backticks is taken only in the exact form
				// "`name` (`file.go`)": in "`field` (step 9a, `adopt.go`)"
				// the file is where the step uses it, not where it is.
				exact := at >= 0 || goFile.FindString(inner) == strings.TrimSpace(inner)
				if at < 0 {
					at, end = m[4], m[5]
				}
				if name := text[at:end]; exact && !strings.HasSuffix(name, ".go") {
					names = append(names, ref{line: lineAt(at), name: name, files: files})
				}
			}
		}
		refs = append(refs, names...)
	}
	for _, m := range nameIn.FindAllStringSubmatchIndex(text, -1) {
		refs = append(refs, ref{line: lineAt(m[2]), name: text[m[2]:m[3]], files: []string{text[m[4]:m[5]]}})
	}
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].line < refs[j].line })
	// "(what `decisions` in `status.go` lists)" is both forms at once.
	return slices.CompactFunc(refs, func(a, b ref) bool { return a.line == b.line && a.name == b.name })
}

// closing returns the offset of the parenthesis that closes the one at
// open, or -1 if none does within a paragraph.
func closing(text string, open int) int {
	depth := 0
	for i := open; i < len(text); i++ {
		switch text[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		case '\n':
			if strings.HasPrefix(text[i:], "\n\n") {
				return -1
			}
		}
	}
	return -1
}

// blankFences replaces the lines of fenced code blocks with empty ones, so
// that line numbers stay those of the doc.
func blankFences(doc string) string {
	lines := strings.Split(doc, "\n")
	in := false
	for i, l := range lines {
		fence := strings.HasPrefix(strings.TrimSpace(l), "```")
		if in || fence {
			lines[i] = ""
		}
		if fence {
			in = !in
		}
	}
	return strings.Join(lines, "\n")
}

// goFiles are the repository's Go files, by slash path from its root.
func goFiles(repo fs.FS) ([]string, error) {
	var files []string
	err := fs.WalkDir(repo, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// resolve returns the files a doc's file name may mean: the file at that
// path from the repository's root, or every file whose path ends with it
// ("classify.go" is pkg/controller/podgroup/classify.go, "capacity/tracker.go"
// pkg/controller/capacity/tracker.go). The docs name files relative to the
// package they describe; matching any package keeps a file found after it
// moves, while a name must still be declared in a file of that name.
func resolve(all []string, name string) []string {
	var out []string
	for _, f := range all {
		if f == name || strings.HasSuffix(f, "/"+name) {
			out = append(out, f)
		}
	}
	return out
}

// declared returns the names a Go file declares: functions, methods (as
// method and Type.method), types, variables, constants, struct fields (as
// field and Type.field) and interface methods, and each top-level name as
// package.Name too.
func declared(repo fs.FS, file string) (map[string]bool, error) {
	src, err := fs.ReadFile(repo, file)
	if err != nil {
		return nil, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", file, err)
	}
	names := map[string]bool{}
	top := func(n string) {
		names[n] = true
		names[f.Name.Name+"."+n] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				top(d.Name.Name)
				continue
			}
			names[d.Name.Name] = true
			names[receiver(d.Recv.List[0].Type)+"."+d.Name.Name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					top(s.Name.Name)
					members(s.Name.Name, s.Type, names)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						top(n.Name)
					}
				}
			}
		}
	}
	return names, nil
}

// receiver is the type name of a method's receiver.
func receiver(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiver(e.X)
	case *ast.IndexExpr:
		return receiver(e.X)
	case *ast.IndexListExpr:
		return receiver(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// members adds a struct's fields or an interface's methods.
func members(typ string, e ast.Expr, names map[string]bool) {
	var list *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		list = e.Fields
	case *ast.InterfaceType:
		list = e.Methods
	default:
		return
	}
	for _, fld := range list.List {
		for _, n := range fld.Names {
			names[n.Name] = true
			names[typ+"."+n.Name] = true
		}
	}
}

// check returns one message per reference of doc (named docName) whose
// name is declared in none of its files, or whose file does not exist.
func check(repo fs.FS, docName, doc string) ([]string, error) {
	all, err := goFiles(repo)
	if err != nil {
		return nil, err
	}
	cache := map[string]map[string]bool{}
	var problems []string
	for _, r := range findRefs(doc) {
		var looked []string
		found := false
		for _, name := range r.files {
			for _, f := range resolve(all, name) {
				looked = append(looked, f)
				if cache[f] == nil {
					if cache[f], err = declared(repo, f); err != nil {
						return nil, err
					}
				}
				found = found || cache[f][r.name]
			}
		}
		switch {
		case len(looked) == 0:
			problems = append(problems, fmt.Sprintf("%s:%d: %s is said to be in %s, but no such file exists", docName, r.line, r.name, strings.Join(r.files, ", ")))
		case !found:
			problems = append(problems, fmt.Sprintf("%s:%d: %s is said to be in %s, but %s declares no %s", docName, r.line, r.name, strings.Join(r.files, ", "), strings.Join(looked, ", "), path.Base(strings.ReplaceAll(r.name, ".", "/"))))
		}
	}
	return problems, nil
}

// Package importgraph follows the module's own imports from a package, as
// the build does, for the tests that keep a layer from reaching back up
// (docs/architecture.md, "Layers").
package importgraph

import (
	"fmt"
	"go/build"
	"path/filepath"
	"strings"
)

// Module is the module's import path, with its trailing slash.
const Module = "github.com/muster-dev/muster/"

// Reach returns every package of the module that start imports, directly
// or not, with start itself, each mapped to a package that imports it ("" for
// start). root is the module's directory; tests pass it relative to their
// own package.
func Reach(root, start string) (map[string]string, error) {
	from := map[string]string{start: ""}
	queue := []string{start}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		pkg, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(path, Module))), 0)
		if err != nil {
			return nil, fmt.Errorf("reading package %s: %w", path, err)
		}
		for _, imp := range pkg.Imports {
			if _, seen := from[imp]; seen || !strings.HasPrefix(imp, Module) {
				continue
			}
			from[imp] = path
			queue = append(queue, imp)
		}
	}
	return from, nil
}

// Under reports whether path is the package dir of the module, or below it.
func Under(path, dir string) bool {
	return strings.HasPrefix(path+"/", Module+dir+"/")
}

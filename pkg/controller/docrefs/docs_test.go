package docrefs

import (
	"os"
	"testing"
)

// TestDocsNameRealCode checks every reference of docs/controller.md and
// docs/architecture.md: each function, method or type they name beside a
// file is declared in that file.
func TestDocsNameRealCode(t *testing.T) {
	repo := os.DirFS("../../..")
	for _, doc := range []string{"docs/controller.md", "docs/architecture.md"} {
		text, err := os.ReadFile("../../../" + doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(findRefs(string(text))) == 0 {
			t.Errorf("%s: found no reference to check; has the way the docs cite code changed?", doc)
		}
		problems, err := check(repo, doc, string(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

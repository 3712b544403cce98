package docrefs

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// fakeRepo is a repository of two packages, as the docs see them.
var fakeRepo = fstest.MapFS{
	"pkg/controller/podgroup/classify.go": {Data: []byte(`package podgroup

type classification struct{ gatedPods []int }

func classifyPods() {}

func (c *classification) failed() {}
`)},
	"pkg/controller/podgroup/memory.go": {Data: []byte(`package podgroup

type groupMemories struct{}

func (m *groupMemories) load() {}

const batchLimit = 500
`)},
	"pkg/controller/capacity/tracker.go": {Data: []byte(`package capacity

type Tracker struct{}

func NewTracker() *Tracker { return nil }
`)},
}

// TestCheck is the checker's rules, one fake doc each: what it takes for a
// reference, and that a wrong name, a wrong file or a missing file fails
// with the doc's line, the name and the file.
func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		// refs are the names the checker reads, problems what it reports
		// (each a substring of one message, in order).
		refs     []string
		problems []string
	}{
		{name: "a bold step name before its file", doc: "2. **classifyPods** (`classify.go`). Classify.", refs: []string{"classifyPods"}},
		{name: "a bold name whose parenthesis says more", doc: "**classifyPods** (`classify.go`, step 2)", refs: []string{"classifyPods"}},
		{name: "a method as Type.method inside the parenthesis, the bold step name left out",
			doc: "1. **settle** (`groupMemories.load`, `memory.go`).", refs: []string{"groupMemories.load"}},
		{name: "a bare method name", doc: "**failed** (`classify.go`)", refs: []string{"failed"}},
		{name: "a type, a field and a constant", doc: "`classification` (`classify.go`), (`gatedPods`, `classify.go`), (`batchLimit`, `memory.go`)",
			refs: []string{"classification", "gatedPods", "batchLimit"}},
		{name: "a package-qualified name and a path below the package dir",
			doc: "(`capacity.NewTracker`, `capacity/tracker.go`)", refs: []string{"capacity.NewTracker"}},
		{name: "a full path", doc: "(`Tracker`, `pkg/controller/capacity/tracker.go`)", refs: []string{"Tracker"}},
		{name: "name in file", doc: "the `classifyPods` in `classify.go` runs first", refs: []string{"classifyPods"}},
		{name: "a parenthesis across a line break", doc: "**classifyPods**\n(`groupMemories.load`,\n`memory.go`)", refs: []string{"groupMemories.load"}},
		{name: "a concept in bold with a space is no name", doc: "**Held joiners** (`classify.go`)"},
		{name: "a backticked field before a step's file is no reference", doc: "`gatesRemoved` (step 9, `classify.go`)"},
		{name: "a parenthesis without a Go file is no reference", doc: "**classifyPods** (step 2)"},
		{name: "a fenced code block is skipped", doc: "```\n**nothing** (`classify.go`)\n```\n"},

		{name: "a wrong name fails with line, name and file", doc: "intro\n\n2. **classifyPod** (`classify.go`).",
			refs:     []string{"classifyPod"},
			problems: []string{"fake.md:3: classifyPod is said to be in classify.go, but pkg/controller/podgroup/classify.go declares no classifyPod"}},
		{name: "a name in the wrong file fails", doc: "**classifyPods** (`memory.go`)", refs: []string{"classifyPods"},
			problems: []string{"fake.md:1: classifyPods is said to be in memory.go"}},
		{name: "a method on the wrong type fails", doc: "(`classification.load`, `memory.go`)", refs: []string{"classification.load"},
			problems: []string{"declares no load"}},
		{name: "a file that does not exist fails", doc: "**classifyPods** (`sort.go`)", refs: []string{"classifyPods"},
			problems: []string{"fake.md:1: classifyPods is said to be in sort.go, but no such file exists"}},
		{name: "a wrong name among right ones fails alone", doc: "**classifyPods** (`classify.go`)\n**admit** (`classify.go`)",
			refs: []string{"classifyPods", "admit"}, problems: []string{"fake.md:2: admit is said"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var refs []string
			for _, r := range findRefs(tc.doc) {
				refs = append(refs, r.name)
			}
			if !slices.Equal(refs, tc.refs) {
				t.Errorf("references = %q, want %q", refs, tc.refs)
			}
			problems, err := check(fakeRepo, "fake.md", tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems = %q, want %d: %q", problems, len(tc.problems), tc.problems)
			}
			for i, want := range tc.problems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d = %q, want it to say %q", i, problems[i], want)
				}
			}
		})
	}
}

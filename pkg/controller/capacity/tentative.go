package capacity

import (
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// tentative gathers the results of a gang placed in parts (roles, slices,
// topology.go) into one Result. Each part is applied to the snapshot as it
// is added, so that the next part sees it, and the snapshot is put back
// when the parts are done: the caller commits or discards the whole, as it
// would one Place's result.
type tentative struct {
	s     *Snapshot
	saved map[int]*schedfw.NodeInfo
	res   Result
}

// add applies a part's result to the snapshot and to the whole.
func (t *tentative) add(r Result) {
	if t.saved == nil {
		t.saved = map[int]*schedfw.NodeInfo{}
	}
	if t.res.overlay == nil {
		t.res.overlay = map[int]*schedfw.NodeInfo{}
	}
	for i, ni := range r.overlay {
		if _, ok := t.saved[i]; !ok {
			t.saved[i] = t.s.infos[i]
		}
		t.s.infos[i] = ni
		t.res.overlay[i] = ni
		t.s.changedNode(i)
	}
	t.res.Assignments = append(t.res.Assignments, r.Assignments...)
	t.res.Copies = append(t.res.Copies, r.Copies...)
	t.res.reserved = append(t.res.reserved, r.reserved...)
	t.res.Unplaced += r.Unplaced
	if r.Short != "" {
		if t.res.Short != "" {
			t.res.Short += "; "
		}
		t.res.Short += r.Short
	}
}

// restore puts the snapshot back as it was before the first part.
func (t *tentative) restore() {
	for i, ni := range t.saved {
		t.s.infos[i] = ni
		t.s.changedNode(i)
	}
	t.saved = nil
}

// result is the whole, not yet committed.
func (t *tentative) result() Result {
	t.restore()
	return t.res
}

// fail gives back the parts placed so far and the part that did not fit,
// and returns a result that places none of the gang's total pods, saying
// why with prefix.
func (t *tentative) fail(part Result, total int, prefix string) Result {
	placed := t.res.Placed()
	t.restore()
	t.s.Discard(part)
	t.s.Discard(t.res)
	return Result{Unplaced: total, Short: prefix + part.Short, topology: true, fit: placed + part.fitCount()}
}

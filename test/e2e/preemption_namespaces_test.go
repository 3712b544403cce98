package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestPreemptionAcrossNamespacesNamesNoOne: a gang in one tenant's
// namespace preempts a gang of lower priority in another's, on shared
// nodes. The preemption is carried out whole (the victim marked, its pods
// given DisruptionTarget and deleted, the preemptor running), and nothing
// that the namespace's readers can read names the other tenant: not the
// victim group's status, conditions or events, not its pods' conditions,
// and not the preemptor's status.preemption, conditions or events, which
// record the victim by an opaque ref and describe it by kind and priority.
func TestPreemptionAcrossNamespacesNamesNoOne(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	mine, theirs := namespace(t, ctx), namespace(t, ctx)
	pool := newTenantPool(t, ctx, "shared")
	w := watchPreemption(t, ctx, theirs) // records the victim pods' DisruptionTarget before they go
	createPods(t, ctx, pool.gang(theirs, "theirs-gang", pool.low))
	running := waitBound(t, ctx, theirs, "theirs-gang", 4)
	victim, err := getGroup(ctx, theirs, "theirs-gang")
	if err != nil {
		t.Fatal(err)
	}

	// The preemption is recorded only until the preemptor is admitted,
	// which with fast release can be within one poll: a watch of the
	// namespace sees every version of its status.
	wMine := watchPreemption(t, ctx, mine)
	createPods(t, ctx, pool.gang(mine, "my-gang", pool.high))
	decided := wMine.waitPreemption(t, ctx, "my-gang")
	if vs := decided.preemption.Victims; len(vs) != 1 || vs[0].Ref != scheduling.VictimRef(victim.UID) || vs[0].Namespace != "" || vs[0].Name != "" || vs[0].UID != "" {
		t.Errorf("status.preemption.victims = %+v, want the one victim by ref %s alone", vs, scheduling.VictimRef(victim.UID))
	}
	waitBound(t, ctx, mine, "my-gang", 4)
	marked := waitCondition(t, ctx, theirs, "theirs-gang", v1alpha1.ConditionPreempted, metav1.ConditionTrue, scheduling.ReasonPreemptionByMuster)
	if c := meta.FindStatusCondition(marked.Status.Conditions, v1alpha1.ConditionPreempted); !strings.Contains(c.Message, "a PodGroup in another namespace (priority 1000, above its 100)") {
		t.Errorf("the victim's Preempted message %q does not describe the preemptor by kind and priority", c.Message)
	}
	var disruptions []string
	waitFor(t, ctx, "the victim's pods to be marked and deleted", func(ctx context.Context) (bool, error) {
		disruptions = disruptions[:0]
		for _, p := range running {
			if r := w.pod(p.UID); r.disruption != "" && r.deleting {
				disruptions = append(disruptions, r.disruption+": "+r.disruptionMessage)
			}
		}
		return len(disruptions) == len(running), nil
	})
	var preemptor *v1alpha1.PodGroup
	waitFor(t, ctx, "the preemptor to be admitted", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, mine, "my-gang")
		if err != nil {
			return false, nil
		}
		preemptor = pg
		return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionAdmitted), nil
	})
	// Events are written asynchronously: wait for the two this preemption
	// must have, then read everything.
	expectEvent(t, ctx, mine, "my-gang", scheduling.EventPreempting)
	expectEvent(t, ctx, theirs, "theirs-gang", scheduling.EventPreempted)

	// What each side may read, and what of the other it must not contain.
	readable := func(ns string, objs ...any) map[string]string {
		out := map[string]string{}
		for i, o := range objs {
			b, _ := json.Marshal(o)
			out[fmt.Sprintf("object %d", i)] = string(b)
		}
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing events in %s: %v", ns, err)
		}
		for _, e := range events.Items {
			out["event "+e.InvolvedObject.Kind+" "+e.InvolvedObject.Name+" "+e.Reason] = e.Message
		}
		return out
	}
	finalVictim, err := getGroup(ctx, theirs, "theirs-gang")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		side     string
		texts    map[string]string
		notNamed []string
	}{
		{"the victim's namespace", readable(theirs, finalVictim.Status, marked.Status, disruptions), []string{mine, "my-gang", string(preemptor.UID)}},
		{"the preemptor's namespace", readable(mine, preemptor.Status, decided.preemption, decided.admitted), []string{theirs, "theirs-gang", string(victim.UID)}},
	}
	for _, c := range checks {
		for where, text := range c.texts {
			for _, name := range c.notNamed {
				if strings.Contains(text, name) {
					t.Errorf("%s: %s names the other tenant's %q: %s", c.side, where, name, text)
				}
			}
		}
	}
}

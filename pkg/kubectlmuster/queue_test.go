package kubectlmuster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	musterfake "github.com/muster-dev/muster/pkg/generated/clientset/versioned/fake"
)

func TestQueue(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	elsewhere := []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 2, Pods: 16}, {Priority: 0, Gangs: 1, Pods: 4}}
	pending := func(ns, name string, pos int32, ahead []string, aheadElsewhere []v1alpha1.QueuedCount, priority, pods, minCount int32, cpu, reason, message string, waited time.Duration) *v1alpha1.PendingPodGroup {
		return &v1alpha1.PendingPodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(now.Add(-waited))},
			Queue:      v1alpha1.QueuePosition{Position: pos, Waiting: 5, Ahead: ahead, AheadElsewhere: aheadElsewhere},
			Priority:   priority, Pods: pods, MinCount: minCount,
			Needs:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), "nvidia.com/gpu": resource.MustParse("8")},
			Reason: reason, Message: message,
		}
	}
	// The cluster's queue, in admission order; a-etl, an admitted group
	// whose pods join it, goes first among equal priority.
	queued := []runtime.Object{
		pending("team-b", "urgent", 1, nil, nil, 1000, 8, 8, "32", scheduling.ReasonInsufficientCapacity, "8 pods requesting cpu 4 each, 6 fit", 3*time.Minute),
		pending("team-b", "urgent-2", 2, []string{"urgent"}, nil, 1000, 8, 8, "32", scheduling.ReasonQueued, "behind urgent", 2*time.Minute),
		pending("team-a", "a-etl", 3, nil, elsewhere, 0, 2, 0, "2", scheduling.ReasonInsufficientCapacity, "2 pods requesting cpu 1 each, 0 fit", 90*time.Minute),
		pending("team-a", "b-train", 4, []string{"a-etl"}, elsewhere, 0, 4, 4, "16", "", "", 40*time.Second),
		pending("team-c", "sweep", 5, nil, []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 2, Pods: 16}, {Priority: 0, Gangs: 2, Pods: 6}}, 0, 1, 1, "1", scheduling.ReasonQueued, "", time.Minute),
	}
	tests := []struct {
		name      string
		namespace string
		output    string
		// asServer serves the list in admission order, as the server does,
		// rather than by namespace and name, as the fake's tracker does.
		asServer   bool
		wantOut    string
		wantIn     []string
		wantStderr string
	}{{
		name:      "a namespace's gangs in admission order, and the gangs elsewhere ahead of its first",
		namespace: "team-a",
		wantOut: `POSITION   NAME      PRIORITY   PODS   MINCOUNT   NEEDS                      WAITING   REASON
3/5        a-etl     0          2      -          cpu 2, nvidia.com/gpu 8    90m       InsufficientCapacity
4/5        b-train   0          4      4          cpu 16, nvidia.com/gpu 8   40s       <none>
Ahead of a-etl, first in team-a: 3 gangs elsewhere: 2 at priority 1000 (16 pods), 1 at priority 0 (4 pods)
`,
	}, {
		name:      "-A: every namespace's gangs, in the server's order, the whole queue's",
		namespace: metav1.NamespaceAll,
		asServer:  true,
		wantOut: `NAMESPACE   POSITION   NAME       PRIORITY   PODS   MINCOUNT   NEEDS                      WAITING   REASON
team-b      1/5        urgent     1000       8      8          cpu 32, nvidia.com/gpu 8   3m        InsufficientCapacity
team-b      2/5        urgent-2   1000       8      8          cpu 32, nvidia.com/gpu 8   2m        Queued
team-a      3/5        a-etl      0          2      -          cpu 2, nvidia.com/gpu 8    90m       InsufficientCapacity
team-a      4/5        b-train    0          4      4          cpu 16, nvidia.com/gpu 8   40s       <none>
team-c      5/5        sweep      0          1      1          cpu 1, nvidia.com/gpu 8    60s       Queued
`,
	}, {
		name:      "-o wide adds each gang's message",
		namespace: "team-b",
		output:    "wide",
		wantIn: []string{
			"REASON                 MESSAGE\n",
			"InsufficientCapacity   8 pods requesting cpu 4 each, 6 fit\n",
			"Ahead of urgent, first in team-b: no gangs elsewhere\n",
		},
	}, {
		name:       "an empty queue says so on stderr, as kubectl get does",
		namespace:  "team-d",
		wantStderr: "No gangs wait in team-d.\n",
	}, {
		name:      "-o yaml prints the PendingPodGroupList, kinds set",
		namespace: "team-c",
		output:    "yaml",
		wantIn:    []string{"apiVersion: scheduling.muster.dev/v1alpha1\nitems:\n", "  kind: PendingPodGroup\n", "    name: sweep\n", "kind: PendingPodGroupList\n"},
	}, {
		name:      "-o name",
		namespace: "team-a",
		output:    "name",
		wantOut:   "pendingpodgroup.scheduling.muster.dev/a-etl\npendingpodgroup.scheduling.muster.dev/b-train\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			muster := musterfake.NewSimpleClientset(queued...)
			if tt.asServer {
				muster.PrependReactor("list", "pendingpodgroups", func(a k8stesting.Action) (bool, runtime.Object, error) {
					list := &v1alpha1.PendingPodGroupList{}
					for _, o := range queued {
						if p := o.(*v1alpha1.PendingPodGroup); a.GetNamespace() == "" || p.Namespace == a.GetNamespace() {
							list.Items = append(list.Items, *p)
						}
					}
					return true, list, nil
				})
			}
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			printFlags := genericclioptions.NewPrintFlags("")
			*printFlags.OutputFormat = tt.output
			o, err := newOutput(printFlags, "wide")
			if err != nil {
				t.Fatal(err)
			}
			c := &clients{kube: kubefake.NewClientset(), muster: muster, namespace: "team-a"}
			if err := queue(context.Background(), c, tt.namespace, o, streams, now); err != nil {
				t.Fatalf("queue: %v", err)
			}
			if tt.wantOut != "" && out.String() != tt.wantOut {
				t.Errorf("output:\n%s\nwant:\n%s", out, tt.wantOut)
			}
			for _, want := range tt.wantIn {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output:\n%s\nwant it to hold %q", out, want)
				}
			}
			if errOut.String() != tt.wantStderr {
				t.Errorf("stderr %q, want %q", errOut, tt.wantStderr)
			}
		})
	}
}

func TestPosition(t *testing.T) {
	tests := []struct {
		name string
		q    v1alpha1.QueuePosition
		want string
	}{
		{"not in the queue", v1alpha1.QueuePosition{}, "not queued"},
		{"first", v1alpha1.QueuePosition{Position: 1, Waiting: 3}, "position 1 of 3, first"},
		{"behind its namespace's gangs", v1alpha1.QueuePosition{Position: 3, Waiting: 3, Ahead: []string{"a", "b"}},
			"position 3 of 3; ahead: a, b in this namespace"},
		{"behind other namespaces' gangs, one of them", v1alpha1.QueuePosition{Position: 2, Waiting: 2, AheadElsewhere: []v1alpha1.QueuedCount{{Priority: 10, Gangs: 1, Pods: 1}}},
			"position 2 of 2; 1 gang elsewhere: 1 at priority 10 (1 pod)"},
		{"behind both, highest priority first as given", v1alpha1.QueuePosition{Position: 5, Waiting: 6, Ahead: []string{"a"},
			AheadElsewhere: []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 2, Pods: 16}, {Priority: 0, Gangs: 1, Pods: 4}}},
			"position 5 of 6; ahead: a in this namespace; 3 gangs elsewhere: 2 at priority 1000 (16 pods), 1 at priority 0 (4 pods)"},
		{"a long line of its own namespace's is cut", v1alpha1.QueuePosition{Position: 13, Waiting: 13,
			Ahead: []string{"g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8", "g9", "g10", "g11", "g12"}},
			"position 13 of 13; ahead: g1, g2, g3, g4, g5, g6, g7, g8, g9, g10 and 2 more in this namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := position(tt.q); got != tt.want {
				t.Errorf("position = %q, want %q", got, tt.want)
			}
		})
	}
}

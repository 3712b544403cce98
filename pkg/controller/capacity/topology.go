package capacity

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Topology says which nodes a gang's pods must, or would rather, share. A
// level is a node label key; a domain of it is the nodes whose label has
// one value (a rack, a block, a zone). Nodes without the label are in no
// domain of the level.
type Topology struct {
	// Levels are tried in order: the gang goes in one domain of the first
	// level that has a domain with room for it.
	Levels []string
	// Required says that the last of Levels must hold: when none of its
	// domains has room, the gang does not fit. Otherwise the gang is
	// placed anywhere then.
	Required bool
	// SliceKey and SliceSize, when SliceSize > 0, put every SliceSize pods
	// (taken in order of name, copies after pods) in one domain of
	// SliceKey within the gang's domain.
	SliceKey  string
	SliceSize int
	// Roles are the constraints of one role's pods (RoleLabel), and of its
	// copies, within the gang's domain.
	Roles map[string]*Topology
	// In, for a group admitted already, is the domain it was admitted in:
	// its pods join it there, and no domain is chosen.
	In *Domain
}

// Domain is one domain of a level.
type Domain struct {
	Key, Value string
}

func (t *Topology) empty() bool {
	return t == nil || (len(t.Levels) == 0 && t.SliceSize == 0 && len(t.Roles) == 0 && t.In == nil)
}

// PlaceGang is Place for a gang with a topology: in one domain of the
// levels t asks for, with its roles and slices in theirs. need is how many
// of pods and copies must fit for a domain to do; 0 takes a domain where
// any fit (an admitted group's joiners, which go in t.In anyway).
//
// A domain is chosen by best fit: of the domains whose nodes could hold
// need pods of the gang by their free cpu, memory and pod slots (an upper
// bound, which never passes over a domain that fits), the one that would
// have room for the fewest more is tried first, so that large domains stay
// free for large gangs. The scheduler's filters then decide, within that
// domain's nodes only, as Place does everywhere; a domain they refuse is
// given back whole and the next is tried. No pod is ever placed outside
// the domain chosen.
func (s *Snapshot) PlaceGang(pods []*corev1.Pod, copies []Copies, t *Topology, need int) Result {
	if t.empty() {
		return s.Place(pods, copies...)
	}
	return s.placeTopology(nil, pods, copies, t, need)
}

// placeTopology places pods and copies in a domain of t's levels within
// the nodes within lists (nil: every node).
func (s *Snapshot) placeTopology(within []int, pods []*corev1.Pod, copies []Copies, t *Topology, need int) Result {
	if t.In != nil {
		nodes := s.domainNodes(within, t.In.Key, t.In.Value)
		res := s.placeParts(nodes, pods, copies, t, need)
		res.Domain = t.In
		return res
	}
	for k, key := range t.Levels {
		res, ok := s.placeInLevel(within, key, pods, copies, t, need)
		if ok || (t.Required && k == len(t.Levels)-1) {
			return res
		}
	}
	return s.placeParts(within, pods, copies, t, need)
}

// domainRank is a domain that might hold the gang, and how much room it
// would have left.
type domainRank struct {
	value string
	nodes []int
	room  int // pods of the gang's smallest shape the domain could take
}

// placeInLevel places the gang in one domain of key, best fit first (see
// PlaceGang). It reports false, with a result that places nothing and
// says why, when no domain fits.
func (s *Snapshot) placeInLevel(within []int, key string, pods []*corev1.Pod, copies []Copies, t *Topology, need int) (Result, bool) {
	need = max(need, 1)
	least := smallestRequest(pods, copies)
	var fits, short []domainRank
	for _, d := range s.level(key) {
		nodes := d.nodes
		if within != nil {
			nodes = intersect(d.nodes, within)
		}
		if len(nodes) == 0 {
			continue
		}
		r := domainRank{value: d.value, nodes: nodes, room: s.room(nodes, least)}
		if r.room >= need {
			fits = append(fits, r)
		} else {
			short = append(short, r)
		}
	}
	sort.SliceStable(fits, func(i, j int) bool { return fits[i].room < fits[j].room })
	best, bestFit, bestShort := "", -1, ""
	for _, d := range fits {
		res := s.placeParts(d.nodes, pods, copies, t, need)
		if res.Placed() >= need {
			res.Domain = &Domain{Key: key, Value: d.value}
			return res, true
		}
		s.Discard(res)
		if f := res.fitCount(); f > bestFit {
			best, bestFit, bestShort = d.value, f, res.Short
		}
	}
	if best == "" && len(short) > 0 {
		// No domain could hold the gang by its free resources alone: the
		// one with the most room says how close it comes.
		d := slices.MaxFunc(short, func(a, b domainRank) int { return a.room - b.room })
		res := s.placeParts(d.nodes, pods, copies, t, need)
		s.Discard(res)
		best, bestFit, bestShort = d.value, res.fitCount(), res.Short
	}
	level := levelName(key)
	msg := fmt.Sprintf("needs %d pods in one %s (%s), and no ready node has that label", need, level, key)
	if best != "" {
		msg = fmt.Sprintf("needs %d pods in one %s (%s); the best %s, %s, fits %d", need, level, key, level, best, bestFit)
		if bestShort != "" {
			msg += ": " + bestShort
		}
	}
	return Result{Unplaced: size(pods, copies), Short: msg, topology: true, fit: max(bestFit, 0)}, false
}

// placeParts places the gang on nodes (nil: every node), each constrained
// role in a domain of its own and the other pods in slices, or all at once
// without slices.
func (s *Snapshot) placeParts(nodes []int, pods []*corev1.Pod, copies []Copies, t *Topology, need int) Result {
	if len(t.Roles) == 0 && t.SliceSize <= 0 {
		return s.placeOn(nodes, pods, copies)
	}
	acc := &tentative{s: s}
	roles := make([]string, 0, len(t.Roles))
	for r := range t.Roles {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	rest, restCopies := pods, copies
	for _, role := range roles {
		var rp []*corev1.Pod
		rp, rest = split(rest, func(p *corev1.Pod) bool { return p.Labels[scheduling.RoleLabel] == role })
		var rc []Copies
		rc, restCopies = split(restCopies, func(c Copies) bool { return c.Name == role })
		n := size(rp, rc)
		if n == 0 {
			continue
		}
		// A role's pods all fit in its domain, or the gang's domain does
		// not do; joiners (need 0) go where they fit.
		roleNeed := n
		if need == 0 {
			roleNeed = 0
		}
		res := s.placeTopology(nodes, rp, rc, t.Roles[role], roleNeed)
		if roleNeed > 0 && res.Placed() < roleNeed {
			return acc.fail(res, size(pods, copies), "role "+role+": ")
		}
		acc.add(res)
		if res.Domain != nil {
			if acc.res.RoleDomains == nil {
				acc.res.RoleDomains = map[string]Domain{}
			}
			acc.res.RoleDomains[role] = *res.Domain
		}
	}
	if t.SliceSize <= 0 || t.In != nil || need == 0 {
		// Joiners of an admitted group go in its domain; the slice a
		// replacement belonged to is not known.
		acc.add(s.placeOn(nodes, rest, restCopies))
		return acc.result()
	}
	slices := cutSlices(rest, restCopies, t.SliceSize)
	slice := &Topology{Levels: []string{t.SliceKey}, Required: true}
	for k, sl := range slices {
		res := s.placeTopology(nodes, sl.pods, sl.copies, slice, size(sl.pods, sl.copies))
		if res.Placed() < size(sl.pods, sl.copies) {
			return acc.fail(res, size(pods, copies), fmt.Sprintf("slice %d of %d: ", k+1, len(slices)))
		}
		acc.add(res)
	}
	return acc.result()
}

// level lists the domains of key among the ready nodes that are not being
// deleted, by value, each with its nodes in order; found once per key for
// the nodes as they are, and shared by the snapshots taken of them
// (Tracker.levels).
func (s *Snapshot) level(key string) []levelDomain {
	if s.levels == nil {
		s.levels = &levelCache{m: map[string][]levelDomain{}}
	}
	c := s.levels
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.m[key]; ok {
		return d
	}
	at := map[string]int{}
	var out []levelDomain
	for i, n := range s.Nodes {
		v, ok := n.Object.Labels[key]
		if !ok || !n.Ready || n.Object.DeletionTimestamp != nil {
			continue
		}
		k, seen := at[v]
		if !seen {
			k = len(out)
			at[v] = k
			out = append(out, levelDomain{value: v})
		}
		out[k].nodes = append(out[k].nodes, i)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].value < out[j].value })
	c.m[key] = out
	return out
}

// levelCache holds the domains of the levels asked for, for one set of
// nodes as they were.
type levelCache struct {
	mu sync.Mutex
	m  map[string][]levelDomain
}

// levelDomain is one domain of a level and its nodes.
type levelDomain struct {
	value string
	nodes []int
}

// domainNodes are the nodes of the domain key=value within within (nil:
// every node); none when no node has it.
func (s *Snapshot) domainNodes(within []int, key, value string) []int {
	for _, d := range s.level(key) {
		if d.value == value {
			if within == nil {
				return d.nodes
			}
			return intersect(d.nodes, within)
		}
	}
	return []int{}
}

// intersect is the indexes in both sorted lists, in order.
func intersect(a, b []int) []int {
	out := []int{}
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// room is how many pods requesting req the nodes could take by their free
// cpu, memory and pod slots: at least as many as the filters would allow.
// A node's free resources are read from its NodeInfo once per snapshot
// and kept until the node changes (a changed node gets a new NodeInfo), so
// that choosing a domain for each gang of a cycle reads a compact array,
// not every node's NodeInfo.
func (s *Snapshot) room(nodes []int, req Resources) int {
	if s.free == nil {
		s.free = make([]nodeFree, len(s.infos))
	}
	total := 0
	for _, i := range nodes {
		f := &s.free[i]
		if ni := s.infos[i]; f.ni != ni {
			*f = nodeFree{ni: ni, pods: int64(ni.Allocatable.AllowedPodNumber - len(ni.Pods)),
				cpu: ni.Allocatable.MilliCPU - ni.Requested.MilliCPU, memory: ni.Allocatable.Memory - ni.Requested.Memory}
		}
		n := f.pods
		if req.MilliCPU > 0 {
			n = min(n, f.cpu/req.MilliCPU)
		}
		if req.Memory > 0 {
			n = min(n, f.memory/req.Memory)
		}
		if n > 0 {
			total += int(n)
		}
	}
	return total
}

// nodeFree is what a node has free, as its NodeInfo ni says.
type nodeFree struct {
	ni                *schedfw.NodeInfo
	pods, cpu, memory int64
}

// smallestRequest is the least cpu and the least memory any of the pods
// or copies requests.
func smallestRequest(pods []*corev1.Pod, copies []Copies) Resources {
	var out Resources
	first := true
	take := func(r Resources) {
		if first {
			out, first = Resources{MilliCPU: r.MilliCPU, Memory: r.Memory}, false
			return
		}
		out.MilliCPU, out.Memory = min(out.MilliCPU, r.MilliCPU), min(out.Memory, r.Memory)
	}
	for _, p := range pods {
		take(PodRequests(p))
	}
	for _, c := range copies {
		if c.Count > 0 {
			take(PodRequests(c.Template))
		}
	}
	return out
}

// levelName is how a message names a level: the last segment of its key
// ("rack" for example.com/rack).
func levelName(key string) string {
	return key[strings.LastIndex(key, "/")+1:]
}

func size(pods []*corev1.Pod, copies []Copies) int {
	n := len(pods)
	for _, c := range copies {
		n += max(c.Count, 0)
	}
	return n
}

// split divides xs into those in says yes to and the rest, in order.
func split[T any](xs []T, in func(T) bool) (yes, no []T) {
	for _, x := range xs {
		if in(x) {
			yes = append(yes, x)
		} else {
			no = append(no, x)
		}
	}
	return yes, no
}

// part is one slice of a gang.
type part struct {
	pods   []*corev1.Pod
	copies []Copies
}

// cutSlices cuts pods, in order of name (naturalLess), then copies, into
// slices of n.
func cutSlices(pods []*corev1.Pod, copies []Copies, n int) []part {
	sorted := slices.Clone(pods)
	sort.SliceStable(sorted, func(i, j int) bool { return naturalLess(sorted[i].Name, sorted[j].Name) })
	var out []part
	cur := part{}
	left := n
	flush := func() {
		out = append(out, cur)
		cur, left = part{}, n
	}
	for _, p := range sorted {
		cur.pods = append(cur.pods, p)
		if left--; left == 0 {
			flush()
		}
	}
	for _, c := range copies {
		for c.Count > 0 {
			k := min(c.Count, left)
			cur.copies = append(cur.copies, Copies{Name: c.Name, Template: c.Template, Count: k})
			c.Count -= k
			if left -= k; left == 0 {
				flush()
			}
		}
	}
	if left < n {
		out = append(out, cur)
	}
	return out
}

// naturalLess orders names as people number them: runs of digits compare
// by value, so that worker-2 comes before worker-10, as the pods of an
// Indexed Job, a StatefulSet or a JobSet are numbered.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digitRun is how many ASCII digits s starts with.
func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

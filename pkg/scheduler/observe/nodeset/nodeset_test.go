package nodeset

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

func nodeInfos(names ...string) []fwk.NodeInfo {
	var list []fwk.NodeInfo
	for _, name := range names {
		n := framework.NewNodeInfo()
		n.SetNode(st.MakeNode().Name(name).Obj())
		list = append(list, n)
	}
	return list
}

// TestFindByAnyNameString: a node is found by the snapshot's own name
// string and by an equal copy (the name of a node updated since the set
// was built); a name not in the snapshot is not found.
func TestFindByAnyNameString(t *testing.T) {
	list := nodeInfos("c", "a", "b")
	set := New(list)
	for i, info := range list {
		name := info.Node().Name
		for _, n := range []string{name, strings.Clone(name)} {
			if got, ok := set.Find(n); !ok || got != int32(i) {
				t.Errorf("Find(%q) = %d, %v; want %d, true", n, got, ok, i)
			}
		}
	}
	if got, ok := set.Find("d"); ok {
		t.Errorf("Find(%q) = %d, true; want not found", "d", got)
	}
	if _, ok := Empty.Find("a"); ok {
		t.Error("the empty set finds a node")
	}
}

// TestOrderByName: ByName lists the nodes' indexes by name, and Rank is
// each node's place in that order.
func TestOrderByName(t *testing.T) {
	set := New(nodeInfos("c", "a", "b"))
	if diff := cmp.Diff([]int32{1, 2, 0}, set.ByName()); diff != "" {
		t.Errorf("ByName (-want +got):\n%s", diff)
	}
	var ranks []int32
	for i := range int32(set.Len()) {
		ranks = append(ranks, set.Rank(i))
	}
	if diff := cmp.Diff([]int32{2, 0, 1}, ranks); diff != "" {
		t.Errorf("ranks (-want +got):\n%s", diff)
	}
	if set.Name(1) != "a" {
		t.Errorf("Name(1) = %q, want a", set.Name(1))
	}
}

// TestBuiltFrom: a set is the set of the snapshot's list it was built from,
// not of another list nor of a shorter one.
func TestBuiltFrom(t *testing.T) {
	list := nodeInfos("a", "b")
	set := New(list)
	if !set.BuiltFrom(list) {
		t.Error("a set is not built from its own list")
	}
	if set.BuiltFrom(list[:1]) || set.BuiltFrom(nodeInfos("a", "b")) || set.BuiltFrom(nil) {
		t.Error("a set is built from another list")
	}
	if !New(nil).BuiltFrom(nil) {
		t.Error("the set of no nodes is not built from an empty list")
	}
}

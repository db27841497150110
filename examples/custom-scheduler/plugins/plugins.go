// Package plugins holds out-of-tree scheduler plugins shaped like those of
// sigs.k8s.io/scheduler-plugins, for the example custom scheduler: a
// Score-only plugin with NormalizeScore, a PreFilter and Filter plugin that
// explains its rejections, a QueueSort-only plugin and a PostFilter-only
// plugin. They are small on purpose; what matters is their shapes.
package plugins

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"

	schedscopeplugins "github.com/schedscope/schedscope/pkg/plugins"
)

// Options register the plugins with a scheduler command, kube-scheduler's
// or schedscope's.
var Options = []kubeschedulerapp.Option{
	kubeschedulerapp.WithPlugin(NodeLabelScoreName, NewNodeLabelScore),
	kubeschedulerapp.WithPlugin(NodeRoomName, NewNodeRoom),
	kubeschedulerapp.WithPlugin(QOSSortName, NewQOSSort),
	kubeschedulerapp.WithPlugin(NoFitName, NewNoFit),
}

// Labels the plugins read.
const (
	// ScoreLabel holds a node's preference, an integer.
	ScoreLabel = "example.com/score"
	// RoomLabel holds the number of pods a node has room for, an integer.
	RoomLabel = "example.com/room"
	// ZoneLabel is the node's zone.
	ZoneLabel = v1.LabelTopologyZone
)

// NodeLabelScore prefers nodes by their ScoreLabel, normalized to the
// framework's score range: Score and NormalizeScore only, like
// trimaran's plugins.
type NodeLabelScore struct{}

var _ fwk.ScorePlugin = &NodeLabelScore{}

// NodeLabelScoreName is the name of NodeLabelScore.
const NodeLabelScoreName = "NodeLabelScore"

func (*NodeLabelScore) Name() string { return NodeLabelScoreName }

// NewNodeLabelScore is the factory of NodeLabelScore.
func NewNodeLabelScore(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return &NodeLabelScore{}, nil
}

func (*NodeLabelScore) Score(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	v, err := strconv.ParseInt(nodeInfo.Node().Labels[ScoreLabel], 10, 64)
	if err != nil || v < 0 {
		return 0, nil
	}
	return v, nil
}

func (p *NodeLabelScore) ScoreExtensions() fwk.ScoreExtensions { return p }

// NormalizeScore scales the scores so that the highest is maxScore.
func (*NodeLabelScore) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s.Score)
	}
	if highest == 0 {
		return nil
	}
	for i := range scores {
		scores[i].Score = scores[i].Score * maxScore / highest
	}
	return nil
}

// NodeRoom rejects nodes whose RoomLabel says they have no room left for the
// pod, counting the pods already on them: PreFilter (with
// PreFilterExtensions) and Filter, like NetworkOverhead, and it explains
// each rejection in the decision record.
type NodeRoom struct{}

var (
	_ fwk.PreFilterPlugin                = &NodeRoom{}
	_ fwk.FilterPlugin                   = &NodeRoom{}
	_ schedscopeplugins.FilterExplainer  = &NodeRoom{}
	_ schedscopeplugins.AttemptExplainer = &NodeRoom{}
	_ fwk.PreFilterExtensions            = &NodeRoom{}
)

// NodeRoomName is the name of NodeRoom.
const NodeRoomName = "NodeRoom"

// ErrReasonNoRoom is NodeRoom's rejection reason.
const ErrReasonNoRoom = "node(s) had no room left"

const nodeRoomStateKey fwk.StateKey = "example.com/" + NodeRoomName

// nodeRoomState is what PreFilter found: whether the pod asks for room.
type nodeRoomState struct{ counted bool }

func (s *nodeRoomState) Clone() fwk.StateData { return s }

func (*NodeRoom) Name() string { return NodeRoomName }

// NewNodeRoom is the factory of NodeRoom.
func NewNodeRoom(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return &NodeRoom{}, nil
}

// PreFilter skips the Filter of pods that opt out with the label
// example.com/room-exempt.
func (*NodeRoom) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if _, exempt := pod.Labels["example.com/room-exempt"]; exempt {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	state.Write(nodeRoomStateKey, &nodeRoomState{counted: true})
	return nil, nil
}

func (p *NodeRoom) PreFilterExtensions() fwk.PreFilterExtensions { return p }

// AddPod and RemovePod need do nothing: Filter counts the pods of the
// node info it is given, which preemption's simulation already changed.
func (*NodeRoom) AddPod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	return nil
}

func (*NodeRoom) RemovePod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	return nil
}

func (*NodeRoom) Filter(_ context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if _, err := state.Read(nodeRoomStateKey); err != nil {
		return fwk.AsStatus(fmt.Errorf("reading %q from cycleState: %w", nodeRoomStateKey, err))
	}
	room, ok := roomOf(nodeInfo.Node())
	if ok && len(nodeInfo.GetPods()) >= room {
		return fwk.NewStatus(fwk.Unschedulable, ErrReasonNoRoom)
	}
	return nil
}

// ExplainFilter says how full the node is, and in which zone.
func (*NodeRoom) ExplainFilter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo, _ *fwk.Status) string {
	room, _ := roomOf(nodeInfo.Node())
	return fmt.Sprintf("zone %s: node %s has room for %d pods and runs %d", nodeInfo.Node().Labels[ZoneLabel], nodeInfo.Node().Name, room, len(nodeInfo.GetPods()))
}

// ExplainAttempt says whether the pod's room was counted.
func (*NodeRoom) ExplainAttempt(_ context.Context, state fwk.CycleState, pod *v1.Pod) string {
	if _, err := state.Read(nodeRoomStateKey); err != nil {
		return fmt.Sprintf("pod %s is exempt from room limits", pod.Name)
	}
	return ""
}

func roomOf(node *v1.Node) (int, bool) {
	room, err := strconv.Atoi(node.Labels[RoomLabel])
	return room, err == nil
}

// QOSSort orders the queue by priority, then QoS class (Guaranteed before
// Burstable before BestEffort), then arrival: QueueSort only, like the
// scheduler-plugins QOSSort.
type QOSSort struct{}

var _ fwk.QueueSortPlugin = &QOSSort{}

// QOSSortName is the name of QOSSort.
const QOSSortName = "QOSSort"

func (*QOSSort) Name() string { return QOSSortName }

// NewQOSSort is the factory of QOSSort.
func NewQOSSort(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return &QOSSort{}, nil
}

func qosRank(pod *v1.Pod) int {
	switch pod.Status.QOSClass {
	case v1.PodQOSGuaranteed:
		return 0
	case v1.PodQOSBurstable:
		return 1
	}
	return 2
}

// NoFit reports, after Filter found no node, how many nodes each
// plugin rejected: PostFilter only, like CrossNodePreemption. It never
// makes room.
type NoFit struct{ handle fwk.Handle }

var _ fwk.PostFilterPlugin = &NoFit{}

// NoFitName is the name of NoFit.
const NoFitName = "NoFit"

func (*NoFit) Name() string { return NoFitName }

// NewNoFit is the factory of NoFit.
func NewNoFit(_ context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return &NoFit{handle: h}, nil
}

func (p *NoFit) PostFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	nodes, err := m.NodesForStatusCode(p.handle.SnapshotSharedLister().NodeInfos(), fwk.Unschedulable)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%d node(s) could make room for %s by other means", len(nodes), pod.Name))
}

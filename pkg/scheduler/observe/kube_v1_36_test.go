//go:build kube1.36

package observe

import (
	"context"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	fwk "k8s.io/kube-scheduler/framework"
)

// leftAlonePluginLists are the framework's plugin lists observePlugins
// knowingly leaves as they are.
//
// The shapes of v1.36 have no PodGroupPostFilter part: v1.36's interface
// is k8s.io/kubernetes' own and takes scheduling/v1alpha2 types, which
// the newest minor's k8s.io/api, against which go.mod is tidied, no longer
// has.
var leftAlonePluginLists = []string{
	"preEnqueuePlugins", "queueSortPlugins", "batchablePlugins", "enqueueExtensions", "extenders",
	"podGroupPostFilterPlugins", "placementGeneratePlugins", "placementScorePlugins",
}

type placementGeneratePart struct{ b *shapeBase }

func (p placementGeneratePart) GeneratePlacements(context.Context, fwk.PodGroupCycleState, fwk.PodGroupInfo, *fwk.Placement) (*fwk.GeneratePlacementsResult, *fwk.Status) {
	return nil, nil
}

type placementScorePart struct{ b *shapeBase }

func (p placementScorePart) ScorePlacement(context.Context, fwk.PodGroupCycleState, fwk.PodGroupInfo, *fwk.PodGroupAssignments) (int64, *fwk.Status) {
	return 1, nil
}

func (p placementScorePart) PlacementScoreExtensions() fwk.PlacementScoreExtensions { return nil }

func (p queueSortPart) Less(x, y fwk.QueuedPodInfo) bool {
	return (corev1helpers.PodPriority(x.GetPodInfo().GetPod()) > corev1helpers.PodPriority(y.GetPodInfo().GetPod())) != p.b.varied
}

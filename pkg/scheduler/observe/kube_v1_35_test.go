//go:build kube1.35

package observe

// leftAlonePluginLists are the framework's plugin lists observePlugins
// knowingly leaves as they are; v1.35 has no pod group or placement points.
var leftAlonePluginLists = []string{
	"preEnqueuePlugins", "queueSortPlugins", "batchablePlugins", "enqueueExtensions", "extenders",
}

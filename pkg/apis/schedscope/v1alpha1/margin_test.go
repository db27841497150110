package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedscope/schedscope/pkg/record"
)

func TestConvertMargin(t *testing.T) {
	if got := ConvertMargin(nil); got != nil {
		t.Errorf("ConvertMargin(nil) = %+v, want nil", got)
	}
	in := &record.Margin{Node: "n1", RunnerUp: "n2", By: 23, Plugins: []record.PluginMargin{{Plugin: "NodeResourcesFit", By: 40}, {Plugin: "ImageLocality", By: -17}}}
	want := &Margin{Node: "n1", RunnerUp: "n2", By: 23, Plugins: []PluginMargin{{Plugin: "NodeResourcesFit", By: 40}, {Plugin: "ImageLocality", By: -17}}}
	if diff := cmp.Diff(want, ConvertMargin(in)); diff != "" {
		t.Errorf("ConvertMargin (-want +got):\n%s", diff)
	}
}

func TestMarginString(t *testing.T) {
	for _, tt := range []struct {
		margin Margin
		want   string
	}{
		{Margin{Node: "n1", RunnerUp: "n2", By: 23, Plugins: []PluginMargin{{"NodeResourcesFit", 40}, {"ImageLocality", -17}}},
			"n1 beat n2 by 23: NodeResourcesFit +40, ImageLocality -17"},
		{Margin{Node: "n2", RunnerUp: "n1", Plugins: []PluginMargin{{record.MarginExtenders, 10}, {"NodeResourcesFit", -10}}},
			"n2 tied with n1 (the scheduler picked at random): extenders +10, NodeResourcesFit -10"},
		{Margin{Node: "n1", RunnerUp: "n2"}, "n1 tied with n2 (the scheduler picked at random)"},
		{Margin{Node: "n1", RunnerUp: "n2", By: -5, Plugins: []PluginMargin{{"ImageLocality", -5}}}, "n1 was chosen though n2 scored 5 more: ImageLocality -5"},
	} {
		if got := tt.margin.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

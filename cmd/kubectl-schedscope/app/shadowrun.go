package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record"
)

// printShadows prints what each shadow profile would have done in the
// attempt, a line per shadow and a line under it per PostFilter answer.
func printShadows(w io.Writer, runs []v1alpha1.ShadowRun) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintln(w, "Shadows:")
	for i := range runs {
		fmt.Fprintf(w, "  %s: %s\n", runs[i].Shadow, shadowRunText(&runs[i]))
		for _, pf := range runs[i].PostFilter {
			fmt.Fprintf(w, "    %s: %s\n", pf.Plugin, postFilterText(&pf))
		}
	}
	fmt.Fprintln(w)
}

// shadowRunText says what a shadow would have done, compared with the live
// attempt; the page says it in the same words. Node names, ranks and
// scores appear only when the answer has them (the caller may list nodes).
func shadowRunText(r *v1alpha1.ShadowRun) string {
	node := ""
	if r.SelectedNode != "" {
		node = " (" + r.SelectedNode + ")"
	}
	var parts []string
	switch r.Outcome {
	case v1alpha1.ShadowSameNode:
		parts = append(parts, "same node"+node)
	case v1alpha1.ShadowOtherNode:
		parts = append(parts, "another node"+node)
		if r.LiveNodeRank > 0 {
			rank := "the live node ranks " + ordinal(r.LiveNodeRank) + " there"
			if r.LiveNodeScore != nil {
				rank += fmt.Sprintf(", score %d", *r.LiveNodeScore)
			}
			parts = append(parts, rank)
		}
		if r.SelectedNode != "" && r.ShadowNodeLiveScore != nil {
			parts = append(parts, fmt.Sprintf("the live profile scores %s %d", r.SelectedNode, *r.ShadowNodeLiveScore))
		}
	case v1alpha1.ShadowOnlyLiveFits:
		parts = append(parts, "no node, where the live profile found one")
	case v1alpha1.ShadowOnlyShadowFits:
		parts = append(parts, "a node"+node+", where the live profile found none")
	case v1alpha1.ShadowNeither:
		parts = append(parts, "no node, as the live profile")
	case v1alpha1.ShadowNotCompared:
		return "not compared: " + r.NotComparedReason
	default:
		parts = append(parts, string(r.Outcome))
	}
	if len(r.Plugins) > 0 {
		parts = append(parts, "because of "+strings.Join(r.Plugins, ", "))
	}
	if r.Message != "" {
		parts = append(parts, r.Message)
	}
	return strings.Join(parts, "; ")
}

// postFilterText says a PostFilter plugin's answer in a shadow's run.
func postFilterText(pf *v1alpha1.ShadowPostFilter) string {
	switch {
	case !pf.DryRun && pf.Message != "":
		return "not asked: " + pf.Message
	case !pf.DryRun:
		return "not asked"
	case pf.Code == record.CodeSuccess && len(pf.Victims) > 0:
		text := fmt.Sprintf("would preempt %d %s", len(pf.Victims), plural(len(pf.Victims), "pod", "pods"))
		if pf.NominatedNode != "" {
			text += " on node " + pf.NominatedNode
		}
		return text
	case pf.Code == record.CodeSuccess && pf.NominatedNode != "":
		return "preemption would help on node " + pf.NominatedNode
	case pf.Code == record.CodeSuccess:
		return "preemption would help"
	case pf.Message != "":
		return "preemption would not help: " + pf.Message
	}
	return "preemption would not help"
}

// ordinal writes n as 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// plural returns one when n is 1 and many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package record

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Bounds on the free text a record copies from the scheduler: status
// messages and reasons come from plugins, and plugins quote pod data in
// them (NodeAffinity's error quotes a preferred term's value, which the API
// does not validate; NodeResourcesFit gives one reason per missing
// resource, and a pod may request a thousand). With these bounds a record's
// size depends on the cluster (its nodes and plugins), never on what a pod
// carries. Only the record is cut: the scheduler's decisions and the
// statuses it sees are untouched.
const (
	// MaxTextBytes bounds Message and each reason, in bytes: 1024, the
	// length kube-scheduler cuts its own FailedScheduling events to (the
	// Events API's note limit). Reasons that aggregate well are far
	// shorter; a cut text ends with "… (N bytes cut)".
	MaxTextBytes = 1024
	// MaxReasons bounds each reasons list: in-tree plugins give a handful
	// of reasons (NodeResourcesFit one per missing resource: cpu, memory,
	// pods, ...). A longer list keeps its first MaxReasons-1 reasons and
	// ends with "… and N more reasons".
	MaxReasons = 16
	// MaxDetails bounds the details plugins attach to one attempt: the
	// first MaxDetails are kept and Attempt.DetailsCut counts the rest.
	MaxDetails = 32
	// MaxDetailBytes bounds each detail, in bytes, cut as by CutText.
	MaxDetailBytes = 256
)

// CutText returns s if it is at most max bytes long, and otherwise its
// beginning, cut on a UTF-8 boundary, followed by "… (N bytes cut)", in at
// most max bytes in all. When max is too small for the marker, the text
// is cut without one.
func CutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	// At most len(s) bytes are cut, so its digits make the longest marker.
	keep := max - len(cutMarker(len(s)))
	if keep < 0 {
		return s[:runeStart(s, max)]
	}
	keep = runeStart(s, keep)
	return s[:keep] + cutMarker(len(s)-keep)
}

func cutMarker(n int) string {
	return "… (" + strconv.Itoa(n) + " bytes cut)"
}

// runeStart returns the largest i <= n at which s has the start of a rune
// (or of an invalid byte), so that s[:i] does not end within a rune.
func runeStart(s string, n int) int {
	for i := 0; i < utf8.UTFMax && n > 0 && n < len(s) && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return n
}

// CutReasons bounds a reasons list for a record: at most MaxReasons
// entries, each at most MaxTextBytes bytes (CutText). It returns reasons
// itself when it is within the bounds, and never modifies it.
func CutReasons(reasons []string) []string {
	within := len(reasons) <= MaxReasons
	for _, r := range reasons {
		if !within {
			break
		}
		within = len(r) <= MaxTextBytes
	}
	if within {
		return reasons
	}
	kept := reasons
	if len(reasons) > MaxReasons {
		kept = reasons[:MaxReasons-1]
	}
	out := make([]string, 0, len(kept)+1)
	for _, r := range kept {
		out = append(out, CutText(r, MaxTextBytes))
	}
	if more := len(reasons) - len(kept); more > 0 {
		out = append(out, fmt.Sprintf("… and %d more reasons", more))
	}
	return out
}

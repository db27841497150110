// Package build turns what was collected of one scheduling attempt into its
// decision record: the nodes grouped by Filter verdict, the scored nodes in
// order with each plugin's scores, the plugins' runs with what they
// returned, node counts and timings. It runs on the recorder's background
// worker, off the scheduling path, and reuses its largest arrays from
// record to record.
package build

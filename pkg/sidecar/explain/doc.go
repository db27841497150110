// Package explain turns one decision record into the answers a person asks
// of it: which node won and why, how every other node fared (a nodes x
// plugins matrix, grouped by identical verdict and paged so that 5000 nodes
// stay readable), and why the pod did not land on a given node.
package explain

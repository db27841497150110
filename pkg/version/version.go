// Package version holds schedscope's version, which the build sets at link
// time.
package version

// Version is schedscope's version: "devel" unless the build sets it with
// -ldflags "-X github.com/schedscope/schedscope/pkg/version.Version=v0.2.0".
var Version = "devel"

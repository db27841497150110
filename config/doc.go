// Package config holds example configuration files for schedscope: the
// scheduler's KubeSchedulerConfiguration profiles, its TracingConfiguration
// and the sidecar's flags. Its test loads each file with the loaders the
// binaries use, so an example that would not start fails the build.
package config

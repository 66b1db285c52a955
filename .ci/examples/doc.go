// Package examples validates the example CI and Kubernetes files under examples/ offline:
// the Kubernetes manifests decode strictly into the Kubernetes API types, the GitHub Actions
// workflow passes actionlint, and both agree with kalab's shard flags. It is a module of its
// own so that kalab's go.mod does not carry the Kubernetes API or actionlint.
package examples

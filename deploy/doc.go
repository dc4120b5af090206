// Package deploy holds no code. Its tests check the files beside it that
// cannot run on a machine without a container engine: the Dockerfiles in
// docker/, the Compose trial stack in compose/ and the Kubernetes manifests
// in k8s/. They parse every file, require pinned images of a known form,
// and hold every --flag and MCPLENS_* variable to the --help of the binary
// that receives it (built from cmd/), and every port to its --listen.
// The shipper mappings are tested in deploy/shippers.
package deploy

#!/usr/bin/env bash
# kube-bins.sh builds kube-apiserver and etcd, the two binaries envtest starts,
# from the Go module proxy into a cache directory outside the repository, and
# prints that directory (use it as KUBEBUILDER_ASSETS).
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod points
# every k8s.io/* staging module at ./staging/src/.... A throwaway module in a
# temporary directory requires it and replaces each of those with its published
# v0.Y.Z twin; then `go build` works like for any module, and Go's build cache
# makes a rebuild take seconds.
#
#   KUBE_VERSION  (default v1.37.2)  k8s.io/kubernetes version
#   ETCD_VERSION  (default v3.7.0)   go.etcd.io/etcd/server/v3 version
#   KUBE_BINS_DIR (default $XDG_CACHE_HOME/bomstream/kube-bins/$KUBE_VERSION)
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
GO="${GO:-go}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}"
out="${KUBE_BINS_DIR:-$cache/bomstream/kube-bins/$KUBE_VERSION}"
mkdir -p "$out"

if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ "${FORCE:-}" = "" ]; then
  echo "$out"
  exit 0
fi

staging="v0.${KUBE_VERSION#v1.}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOWORK=off

# kube-apiserver
(
  cd "$work"
  mkdir kube && cd kube
  $GO mod init bomstream.local/kube-bins >/dev/null 2>&1
  gomod="$($GO mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  {
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9./-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$gomod"
    echo ")"
  } >> go.mod
  $GO get "k8s.io/kubernetes/cmd/kube-apiserver@$KUBE_VERSION" >&2
  CGO_ENABLED=0 $GO build -trimpath -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
)

# etcd: the root package of go.etcd.io/etcd/server/v3 is etcd's main.
(
  cd "$work"
  mkdir etcd && cd etcd
  $GO mod init bomstream.local/etcd-bin >/dev/null 2>&1
  $GO get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
  CGO_ENABLED=0 $GO build -trimpath -o "$out/etcd" go.etcd.io/etcd/server/v3 >&2
)

echo "$out"

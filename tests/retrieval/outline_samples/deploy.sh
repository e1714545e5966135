#!/usr/bin/env bash
# Deploys the site: build, upload, switch the symlink, prune old releases.
set -euo pipefail

RELEASES=/srv/site/releases
KEEP=5

log() {
  printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

# Builds into a fresh release folder and prints its path.
build() {
  local dest="$RELEASES/$(date +%Y%m%d%H%M%S)"
  mkdir -p "$dest"
  npm ci && npm run build -- --out-dir "$dest"
  echo "$dest"
}

function switch_current {
  ln -sfn "$1" /srv/site/current
  log "switched to $1"
}

prune() {
  ls -1dt "$RELEASES"/* | tail -n +$((KEEP + 1)) | xargs -r rm -rf
}

main() {
  local release
  release=$(build)
  switch_current "$release"
  prune
}

main "$@"

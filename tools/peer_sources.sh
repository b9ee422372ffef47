#!/usr/bin/env bash
# Export the public sources of the peer tools (nccl-tests, nvbandwidth) into .peer_src/ (git-ignored, never committed),
# so that a device call can carry them to the GPU machine, which reaches nothing outside it, and build them there with
# tools/build_peer_tools.sh.
#   bash tools/peer_sources.sh NCCL_TESTS_GIT_DIR NVBANDWIDTH_GIT_DIR [BOOST_PROGRAM_OPTIONS_GIT_DIR]
# Each argument is a git directory of that public repository (a clone, or the library's fetch mirror); the commit
# exported is written beside its tree (.peer_src/<name>.commit), for the comparison to name. The third is for a GPU
# machine that has Boost's headers but not its compiled program_options library, which nvbandwidth links: its sources
# at the tag of the headers there (BOOST_TAG, default boost-1.83.0, the rig's) are built with nvbandwidth.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.peer_src
rm -rf "$out"
mkdir -p "$out"
export_tree() {  # name git_dir revision
  mkdir "$out/$1"
  git --git-dir "$2" archive --format=tar "$3" | tar -x -C "$out/$1"
  git --git-dir "$2" rev-parse "$3^{commit}" >"$out/$1.commit"
  echo "$1 $3 $(cat "$out/$1.commit") -> .peer_src/$1"
}
export_tree nccl-tests "${1:?nccl-tests git dir}" HEAD
export_tree nvbandwidth "${2:?nvbandwidth git dir}" HEAD
if [ -n "${3:-}" ]; then
  export_tree boost-program_options "$3" "${BOOST_TAG:-boost-1.83.0}"
fi

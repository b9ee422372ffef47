#!/usr/bin/env bash
# Build the peer tools the probes are compared with, nccl-tests and nvbandwidth, on the GPU machine from their public
# sources in .peer_src/ (tools/peer_sources.sh; carried there, never committed), into BUILD_DIR (default /tmp/peer_tools).
#   bash tools/build_peer_tools.sh [BUILD_DIR]
# nccl-tests links the libnccl that torch loads (the nvidia-nccl wheel), so that both measure the same NCCL.
# Writes BUILD_DIR/built.txt, one line per tool: "<tool> built <binary dir>" or "<tool> not built: <what is missing>",
# and each build's log beside it; exits 0 either way (a tool that cannot be built is reported, not fatal).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/.peer_src
build=${1:-/tmp/peer_tools}
mkdir -p "$build"
report=$build/built.txt
: >"$report"
jobs=$(nproc)

say() { echo "$*" | tee -a "$report"; }

cuda_home=""
for candidate in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-*; do
  if [ -n "$candidate" ] && [ -x "$candidate/bin/nvcc" ]; then cuda_home=$candidate; break; fi
done
if [ -z "$cuda_home" ] && command -v nvcc >/dev/null; then
  cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
fi
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)
echo "CUDA toolkit: ${cuda_home:-none found}; GPU compute capability: ${arch:-unknown}" | tee "$build/environment.txt"

# The NCCL torch loads: headers and library from the nvidia-nccl wheel.
nccl_wheel=$(python3 -c 'import os, nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
echo "NCCL wheel: ${nccl_wheel:-none found}; torch NCCL $(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>&1)" \
  | tee -a "$build/environment.txt"

build_nccl_tests() {
  [ -d "$src/nccl-tests" ] || { say "nccl-tests not built: no source in .peer_src/nccl-tests"; return; }
  [ -n "$cuda_home" ] || { say "nccl-tests not built: no CUDA toolkit (nvcc) on this machine"; return; }
  [ -n "$nccl_wheel" ] && [ -f "$nccl_wheel/include/nccl.h" ] || {
    say "nccl-tests not built: no nccl.h in the nvidia-nccl wheel (${nccl_wheel:-not installed})"; return; }
  # The linker wants libnccl.so; the wheel has only libnccl.so.2.
  local nccl=$build/nccl
  mkdir -p "$nccl/lib"
  ln -sfn "$nccl_wheel/include" "$nccl/include"
  ln -sf "$nccl_wheel/lib/libnccl.so.2" "$nccl/lib/libnccl.so"
  ln -sf "$nccl_wheel/lib/libnccl.so.2" "$nccl/lib/libnccl.so.2"
  if make -C "$src/nccl-tests/src" -j "$jobs" BUILDDIR="$build/nccl-tests" NCCL_HOME="$nccl" CUDA_HOME="$cuda_home" \
      NVCC_GENCODE="-gencode=arch=compute_${arch},code=sm_${arch}" >"$build/nccl-tests.log" 2>&1 \
      && [ -x "$build/nccl-tests/all_reduce_perf" ]; then
    say "nccl-tests built $build/nccl-tests (LD_LIBRARY_PATH=$nccl/lib)"
  else
    say "nccl-tests not built: make failed: $(grep -m 1 -iE 'error|cannot find' "$build/nccl-tests.log" || tail -n 1 "$build/nccl-tests.log")"
  fi
}

# Boost's program_options built from .peer_src/boost-program_options against the Boost headers installed here, for a
# machine that has the headers but not the compiled library (the rig: Boost 1.83 headers, no libboost_program_options).
build_program_options() {
  local source=$src/boost-program_options lib=$build/boost
  [ -f /usr/include/boost/program_options.hpp ] || { echo "no Boost headers (/usr/include/boost)"; return 1; }
  [ -d "$source/src" ] || { echo "no libboost_program_options and no source in .peer_src/boost-program_options"; return 1; }
  mkdir -p "$lib/objects"
  for file in "$source"/src/*.cpp; do
    [ "$(basename "$file")" = winmain.cpp ] && continue
    g++ -O2 -fPIC -std=c++17 -DBOOST_PROGRAM_OPTIONS_NO_LIB -c "$file" -o "$lib/objects/$(basename "$file" .cpp).o" \
      >>"$build/nvbandwidth.log" 2>&1 || { echo "compiling $(basename "$file") of program_options failed"; return 1; }
  done
  ar rcs "$lib/libboost_program_options.a" "$lib"/objects/*.o
}

build_nvbandwidth() {
  [ -d "$src/nvbandwidth" ] || { say "nvbandwidth not built: no source in .peer_src/nvbandwidth"; return; }
  [ -n "$cuda_home" ] || { say "nvbandwidth not built: no CUDA toolkit (nvcc) on this machine"; return; }
  : >"$build/nvbandwidth.log"
  if command -v cmake >/dev/null \
      && cmake -S "$src/nvbandwidth" -B "$build/nvbandwidth" -DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" \
        -DCMAKE_CUDA_ARCHITECTURES="$arch" >>"$build/nvbandwidth.log" 2>&1 \
      && make -C "$build/nvbandwidth" -j "$jobs" >>"$build/nvbandwidth.log" 2>&1 \
      && [ -x "$build/nvbandwidth/nvbandwidth" ]; then
    say "nvbandwidth built $build/nvbandwidth"
    return
  fi
  # CMake found no Boost program_options library (or no cmake): the sources CMakeLists.txt lists, compiled by nvcc
  # and linked as it links them (program_options, NVML, the driver API; the toolkit's stubs at link time).
  local why
  if ! why=$(build_program_options); then
    say "nvbandwidth not built: CMake failed ($(grep -m 1 -iE 'could not find|error' "$build/nvbandwidth.log")) and $why"
    return
  fi
  mkdir -p "$build/nvbandwidth"
  local version
  version=$(cut -c 1-7 "$src/nvbandwidth.commit" 2>/dev/null || echo unknown)
  if (cd "$src/nvbandwidth" && "$cuda_home/bin/nvcc" -O3 -std=c++17 -arch="sm_$arch" -I. -DGIT_VERSION="\"$version\"" \
        testcase.cpp testcases_ce.cpp testcases_sm.cpp kernels.cu memcpy.cpp nvbandwidth.cpp multinode_memcpy.cpp \
        multinode_testcases.cpp output.cpp json_output.cpp json/jsoncpp.cpp -o "$build/nvbandwidth/nvbandwidth" \
        -L"$build/boost" -lboost_program_options -L"$cuda_home/lib64/stubs" -lnvidia-ml -lcuda) \
      >>"$build/nvbandwidth.log" 2>&1 && [ -x "$build/nvbandwidth/nvbandwidth" ]; then
    say "nvbandwidth built $build/nvbandwidth (by nvcc, program_options built from source: CMake found no Boost library)"
  else
    say "nvbandwidth not built: nvcc failed: $(grep -m 1 -iE 'error' "$build/nvbandwidth.log" || tail -n 1 "$build/nvbandwidth.log")"
  fi
}

build_nccl_tests
build_nvbandwidth

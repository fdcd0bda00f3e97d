#!/usr/bin/env bash
# NVIDIA's cuda-samples as rcud's compatibility suite: builds the samples of
# 0_Introduction, 2_Concepts_and_Techniques, 3_CUDA_Features, 4_CUDA_Libraries
# and 6_Performance with their own CMakeLists for sm_80, twice (separable compilation ON, as
# NVIDIA sets it, and forced OFF), runs every built sample under `rcud run`
# on the emulated GPU, and writes results.md and results.tsv.
#
# Usage: scripts/cuda-samples.sh <cuda-samples checkout> <output dir> [rcud]
#
# Environment:
#   RCUD           the rcud executable, when no third argument names it
#                  (default <repo>/target/release/rcud; librcudart.so must sit
#                  beside it; copy both elsewhere if the repo may be rebuilt
#                  during the run)
#   TIMEOUT        seconds per sample run (default 300)
#   CONFIGS        configurations to do, in order (default "on off": rdc ON, OFF)
#   STEPS          "build run" (default); "run" alone reuses the build dirs;
#                  "none" only rewrites results.md from results.tsv
#   RERUN          statuses to run again, e.g. "FAIL TIMEOUT": only samples
#                  whose row in results.tsv has one of them are run, and their
#                  rows replaced (for a newer rcud); "new" runs the samples
#                  that have no row yet (to finish an interrupted run)
#
# Results: PASS (exit 0, no failure message, no kernel fault reported),
# WAIVED (exit 2, EXIT_WAIVED of NVIDIA's helpers, or "Waiving"), FAIL,
# TIMEOUT, BUILD-FAIL, N/A (needs a display, MPI, NvSci or two GPUs). Each
# run's output is in <out>/logs/rdc-{on,off}/<sample>.log.
#   JOBS           parallel compile jobs (default 2)
#   FOLDERS        the sample folders to build (default: the five above)
#
# Why it is built this way:
# - CI has no access to GitHub, so the checkout is given, not cloned.
# - CMake and Ninja come from PyPI into <out>/cmake-venv: no system CMake needed.
#   So do the CUDA profiler API and NVTX headers (cuda_profiler_api.h,
#   nvtx3/), which asyncAPI, matrixMul and cudaGraphsPerfScaling include and
#   ensure-nvcc.sh's toolkit lacks; their include dir is added to the flags,
#   and so is that of the math libraries' headers: a toolkit has them in its
#   own include dir, where samples that only include curand_kernel.h
#   (MC_EstimatePiInlineP, MC_SingleAsianOptionP) find them.
# - nvcc is the CUDA 13 toolkit of scripts/ensure-nvcc.sh (PyPI). CMake's
#   FindCUDAToolkit accepts its layout (nvidia/cu13/{bin,include,lib}) given
#   CUDAToolkit_ROOT and CMAKE_CUDA_COMPILER. The PyPI toolkit has no
#   libcuda.so (driver stub) and no unversioned libnvrtc.so, so the script
#   makes a stub libcuda.so (soname libcuda.so.1, the cu* names rcud's
#   library exports, as NVIDIA's stubs/libcuda.so is) and points
#   CUDA_nvrtc_LIBRARY at libnvrtc.so.13.
# - Every sample's CMakeLists does `set(CMAKE_CUDA_ARCHITECTURES 75 ... 120)`
#   after project(), which shadows -DCMAKE_CUDA_ARCHITECTURES. A project-include
#   hook (CMAKE_PROJECT_INCLUDE) defers, to the end of each sample directory, a
#   call that sets the targets' CUDA_ARCHITECTURES to 80 (one arch: nine would
#   take nine times the compile time on 2 cores) and, for the OFF
#   configuration, CUDA_SEPARABLE_COMPILATION OFF. Nothing in the checkout is
#   modified. Fatbins that a sample builds with its own custom command (the
#   *Drv samples) keep NVIDIA's list of architectures: SASS only, which the
#   emulated GPU cannot run (they fail with CUDA_ERROR_NO_BINARY_FOR_GPU,
#   as they would on a GPU of an architecture not in the list).
# - The math libraries rcud replaces (cuBLAS, cuBLASLt, cuFFT, cuRAND,
#   cuSPARSE, cuSOLVER) get CUDA::<lib> targets made of their headers (from
#   the PyPI wheels, scripts/ensure-cuda-libs.py) and link stubs with
#   NVIDIA's sonames and symbol versions (every function of rcud's export
#   list, empty), so samples link as on a CUDA machine and load rcud's
#   libraries under `rcud run`. Libraries rcud does not replace (NPP,
#   nvJPEG, nvJitLink) get a placeholder target that links
#   -lrcud_missing_<lib>, so a sample needing one fails to build with that
#   name in its log instead of stopping the whole configure.
# - A wrapper CMakeLists adds the four folders only (NVIDIA's top level adds
#   all eight, with libraries and NVVM samples out of scope here).
# - Builds and runs go through `nice -n 19`, one sample runs at a time: the
#   machines this runs on are shared.
# - Samples run from their build directory, where the fatbins and PTX files
#   they load are; NVIDIA's helpers (sdkFindFilePath) look for data files
#   relative to the working directory, "./", "./data/" and
#   "../../../Samples/<folder>/<sample>/data/" among others, so <out>/Samples
#   is a link to the checkout's Samples: from <out>/build-rdc-X/<folder>/<sample>
#   that last path reaches the sample's data in the checkout.
set -euo pipefail

usage() { echo "usage: $0 <cuda-samples checkout> <output dir> [rcud]" >&2; exit 64; }
[[ $# -ge 2 ]] || usage
log() { printf 'cuda-samples: %s\n' "$*" >&2; }

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
repo_root="$(cd -- "$script_dir/.." && pwd -P)"
src="$(cd -- "$1" && pwd -P)"
mkdir -p "$2"
out="$(cd -- "$2" && pwd -P)"
RCUD="${3:-${RCUD:-$repo_root/target/release/rcud}}"
TIMEOUT="${TIMEOUT:-300}"
CONFIGS="${CONFIGS:-on off}"
STEPS="${STEPS:-build run}"
RERUN="${RERUN:-}"
JOBS="${JOBS:-2}"
read -r -a FOLDERS <<<"${FOLDERS:-0_Introduction 2_Concepts_and_Techniques 3_CUDA_Features 4_CUDA_Libraries 6_Performance}"

[[ -d "$src/Samples/0_Introduction" ]] || { log "$src is not a cuda-samples checkout"; exit 1; }
[[ -x "$RCUD" ]] || { log "no rcud at $RCUD (build it, or set RCUD)"; exit 1; }
rcud_lib="$(dirname -- "$RCUD")/librcudart.so"

# --- tools -----------------------------------------------------------------
venv="$out/cmake-venv"
extra_inc() { ls -d "$venv"/lib/python3*/site-packages/nvidia/cu13/include 2>/dev/null | head -1; }
if [[ ! -x "$venv/bin/cmake" || ! -x "$venv/bin/ninja" || ! -e "$(extra_inc)/cuda_profiler_api.h" ]]; then
    log "installing CMake, Ninja and the profiler/NVTX headers from PyPI into $venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check --quiet cmake ninja \
        "nvidia-cuda-profiler-api==13.*" "nvidia-nvtx==13.*"
fi
cmake="$venv/bin/cmake"
inc="$(extra_inc)"
nvcc="$("$script_dir/ensure-nvcc.sh")"
cuda_root="$(cd -- "$(dirname -- "$nvcc")/.." && pwd -P)"

# Driver stub: every cu* function rcud exports, as empty functions, with the
# driver's soname; the samples then need libcuda.so.1, which `rcud run` serves.
stubs="$out/stubs"
if [[ ! -e "$stubs/libcuda.so" ]]; then
    mkdir -p "$stubs"
    nm -D --defined-only "$rcud_lib" | awk '$3 ~ /^cu[A-Z]/ {print "void " $3 "(void) {}"}' \
        | sort -u >"$stubs/cuda_stub.c"
    cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stubs/libcuda.so" "$stubs/cuda_stub.c"
fi

# Math-library link stubs: soname and version node of NVIDIA's library, every
# function of rcud's export list (cuda-shim/exports/<list>).
math_inc="$(python3 "$script_dir/ensure-cuda-libs.py")"
for spec in "cublas libcublas.so.13 cublas.txt" "cublasLt libcublasLt.so.13 cublasLt.txt" \
    "cufft libcufft.so.12 cufft.txt" "curand libcurand.so.10 curand.txt" \
    "cusparse libcusparse.so.12 cusparse.txt" "cusolver libcusolver.so.12 cusolver.txt"; do
    read -r lib soname list <<<"$spec"
    exports="$repo_root/cuda-shim/exports/$list"
    if [[ ! "$stubs/lib$lib.so" -nt "$exports" ]]; then
        mkdir -p "$stubs"
        grep -v '^#' "$exports" | awk '{print "void " $1 "(void) {}"}' >"$stubs/$lib.c"
        { echo "$soname { global:"; grep -v '^#' "$exports" | awk '{print "  " $1 ";"}'; echo "local: *; };"; } \
            >"$stubs/$lib.map"
        cc -shared -fPIC -Wl,-soname,"$soname" -Wl,--version-script="$stubs/$lib.map" \
            -o "$stubs/lib$lib.so" "$stubs/$lib.c"
    fi
done

# nvJitLink, which jitLto finds with find_library: an empty library with its
# soname, so that the sample builds; rcud does not provide nvJitLink, and the
# sample fails at run time saying so.
if [[ ! -e "$stubs/libnvJitLink.so" ]]; then
    echo 'void rcud_no_nvjitlink(void) {}' >"$stubs/nvjitlink.c"
    cc -shared -fPIC -Wl,-soname,libnvJitLink.so.13 -o "$stubs/libnvJitLink.so" "$stubs/nvjitlink.c"
fi

# Wrapper project and the per-directory hook (see the header for why).
wrap="$out/wrapper"
mkdir -p "$wrap"
{
    echo 'cmake_minimum_required(VERSION 3.20)'
    echo 'project(rcud_cuda_samples LANGUAGES C CXX CUDA)'
    echo 'find_package(CUDAToolkit REQUIRED)'
    for f in "${FOLDERS[@]}"; do echo "add_subdirectory(\"$src/Samples/$f\" \"$f\")"; done
} >"$wrap/CMakeLists.txt"
cat >"$wrap/rcud-hook.cmake" <<'EOF'
# Included after every project(); runs _rcud_fix_targets at the end of the
# directory, after the sample has set its own architectures and properties.
function(_rcud_fix_targets)
  get_property(tgts DIRECTORY PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS tgts)
    get_target_property(ty ${t} TYPE)
    if(ty MATCHES "EXECUTABLE|LIBRARY")
      set_target_properties(${t} PROPERTIES CUDA_ARCHITECTURES "${RCUD_CUDA_ARCH}")
      if(RCUD_RDC STREQUAL "OFF")
        set_target_properties(${t} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
      endif()
    endif()
  endforeach()
  foreach(lib cublas cublasLt curand cufft cusolver cusparse)
    if(NOT TARGET CUDA::${lib})
      add_library(CUDA::${lib} SHARED IMPORTED)
      set_target_properties(CUDA::${lib} PROPERTIES
        IMPORTED_LOCATION "${RCUD_MATH_STUBS}/lib${lib}.so"
        INTERFACE_INCLUDE_DIRECTORIES "${RCUD_MATH_INCLUDE}")
      # The dependencies CMake's FindCUDAToolkit gives these targets
      # (NVIDIA's libcusolver needs cuBLAS and cuSPARSE): samples that call
      # cusparse* but name only CUDA::cusolver link as on a CUDA machine.
      if(lib STREQUAL "cublas")
        set_property(TARGET CUDA::cublas PROPERTY INTERFACE_LINK_LIBRARIES CUDA::cublasLt)
      elseif(lib STREQUAL "cusolver")
        set_property(TARGET CUDA::cusolver PROPERTY INTERFACE_LINK_LIBRARIES
          CUDA::cublas CUDA::cublasLt CUDA::cusparse)
      endif()
    endif()
  endforeach()
  # Static math libraries (cuFFT callbacks need cufft_static): rcud's are
  # shared only.
  foreach(lib nvjpeg npp nppc nppial nppicc nppidei nppif nppig nppim nppist nppisu nppitc npps nvJitLink
          cublas_static cublasLt_static cufft_static curand_static cusparse_static cusolver_static)
    if(NOT TARGET CUDA::${lib})
      add_library(CUDA::${lib} INTERFACE IMPORTED)
      set_target_properties(CUDA::${lib} PROPERTIES INTERFACE_LINK_LIBRARIES "rcud_missing_${lib}")
    endif()
  endforeach()
endfunction()
cmake_language(DEFER CALL _rcud_fix_targets)
EOF

# --- samples and what they need --------------------------------------------
# Prints "folder<TAB>sample<TAB>target" for every executable, in the order of
# the folders' CMakeLists.
list_samples() {
    local f s t
    for f in "${FOLDERS[@]}"; do
        for s in $(sed -n 's/^add_subdirectory(\([^)]*\)).*/\1/p' "$src/Samples/$f/CMakeLists.txt"); do
            t="$(sed -n 's/^[[:space:]]*add_executable(\([A-Za-z0-9_]*\).*/\1/p' "$src/Samples/$f/$s/CMakeLists.txt" | head -1)"
            printf '%s\t%s\t%s\n' "$f" "$s" "${t:-$s}"
        done
    done
}

# Why a sample cannot run here at all (empty: it can), from its CMakeLists
# and the "Dependencies needed to build/run" of its README.
not_applicable() {
    local d="$src/Samples/$1/$2" deps
    deps="$(awk '/^## Dependencies needed/{f=1;next} /^## /{f=0} f' "$d/README.md" 2>/dev/null \
        | grep -o '\[[A-Za-z0-9 _-]*\]' | tr -d '[]' | tr '\n' ' ' || true)"
    case " $deps " in
        *" MPI "*) echo "needs MPI"; return ;;
        *" EGL "*) echo "needs a display (EGL)"; return ;;
        *" GL "* | *" X11 "* | *" Vulkan "* | *" VULKAN "*) echo "needs a display (OpenGL/X11)"; return ;;
        *" NVSCI "* | *" NvSci "*) echo "needs NvSci"; return ;;
    esac
    if grep -qE 'find_package\((OpenGL|GLUT|EGL|Vulkan|MPI)' "$d/CMakeLists.txt"; then
        echo "needs a display or MPI (CMakeLists)"; return
    fi
    if grep -qE 'CUDA::(npp|nvjpeg)|FreeImage' "$d/CMakeLists.txt"; then
        echo "needs NPP, nvJPEG or FreeImage, which rcud does not provide"; return
    fi
    # Peer-to-peer between two GPUs is what these samples are about; with one
    # GPU they only print that they are waived.
    case "$2" in
        simpleP2P | streamOrderedAllocationP2P) echo "needs two GPUs with peer access (multi-GPU by design)" ;;
    esac
}

# --- build -----------------------------------------------------------------
build_config() {
    local cfg="$1" bdir="$out/build-rdc-$1" rdc
    rdc="$([[ $cfg == on ]] && echo ON || echo OFF)"
    log "configuring rdc $rdc in $bdir"
    nice -n 19 "$cmake" -S "$wrap" -B "$bdir" -G Ninja \
        -DCMAKE_MAKE_PROGRAM="$venv/bin/ninja" \
        -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$cuda_root" \
        -DCMAKE_CUDA_ARCHITECTURES=80 -DRCUD_CUDA_ARCH=80 -DRCUD_RDC="$rdc" \
        -DCMAKE_CUDA_FLAGS="-I$inc -I$math_inc" -DCMAKE_CXX_FLAGS="-I$inc -I$math_inc" \
        -DCMAKE_PROJECT_INCLUDE="$wrap/rcud-hook.cmake" \
        -DCUDA_cuda_driver_LIBRARY="$stubs/libcuda.so" \
        -DRCUD_MATH_STUBS="$stubs" -DRCUD_MATH_INCLUDE="$math_inc" \
        -DNVJITLINK_LIB="$stubs/libnvJitLink.so" \
        -DCUDA_nvrtc_LIBRARY="$cuda_root/lib/libnvrtc.so.13" \
        >"$out/configure-rdc-$cfg.log" 2>&1 || { log "configure failed: $out/configure-rdc-$cfg.log"; return 1; }
    log "building rdc $rdc (log: $out/build-rdc-$cfg.log)"
    # -k 0: go on past failing samples; each failure is found again per sample.
    nice -n 19 "$cmake" --build "$bdir" -j "$JOBS" -- -k 0 >"$out/build-rdc-$cfg.log" 2>&1 || true
}

# First error line of a sample's failed build steps in the Ninja log.
build_error() {
    local cfg="$1" f="$2" s="$3"
    [[ -f "$out/build-rdc-$cfg.log" ]] || return 0
    awk -v p="$f/$s/" '
        /^FAILED: / { inb = index($0, p) > 0; next }
        /^\[[0-9]+\/[0-9]+\] / { inb = 0 }
        inb && /error|undefined reference|cannot find|No such file/ { print; exit }
    ' "$out/build-rdc-$cfg.log" | cut -c1-200
}

# --- run -------------------------------------------------------------------
ln -sfn "$src/Samples" "$out/Samples"
tsv="$out/results.tsv"
clean() { tr '\t|\r' '  ' | tr -s ' ' | sed 's/^ //; s/ $//' | cut -c1-200; }

run_config() {
    local cfg="$1" bdir="$out/build-rdc-$1" f s t exe na status note rc start secs lg
    mkdir -p "$out/logs/rdc-$cfg"
    while IFS=$'\t' read -r f s t; do
        if [[ -n "$RERUN" ]]; then
            local prev
            prev="$(awk -F'\t' -v s="$s" -v c="$cfg" '$1==s && $3==c {print $4}' "$tsv" 2>/dev/null)"
            [[ " $RERUN " == *" ${prev:-new} "* ]] || continue
        fi
        exe="$bdir/$f/$s/$t"
        lg="$out/logs/rdc-$cfg/$s.log"
        secs=""
        na="$(not_applicable "$f" "$s")"
        if [[ -n "$na" ]]; then
            status="N/A"; note="$na"
        elif [[ ! -x "$exe" ]]; then
            status="BUILD-FAIL"; note="$(build_error "$cfg" "$f" "$s" | clean)"
        else
            log "rdc $cfg: $s"
            start=$(date +%s.%N)
            set +e
            (cd "$bdir/$f/$s" && CUDA_PATH="$cuda_root" \
                LD_LIBRARY_PATH="$cuda_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
                timeout -k 10 "$TIMEOUT" nice -n 19 "$RCUD" run -- "$exe" </dev/null >"$lg" 2>&1)
            rc=$?
            set -e
            secs="$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')"
            if [[ $rc -eq 124 || $rc -eq 137 ]]; then
                status="TIMEOUT"; note="killed after ${TIMEOUT} s"
            elif [[ $rc -eq 2 ]] || grep -q 'Waiving' "$lg"; then
                status="WAIVED"; note="$( (grep -m1 -iE 'waiv|requires|not supported|support' "$lg" || true) | clean)"
            elif [[ $rc -eq 0 ]] && ! grep -qE 'Result = FAIL|Test failed|FAILED|cudaErrorIllegalAddress' "$lg"; then
                status="PASS"; note=""
            else
                # Exit 0 with a failure message counts as a failure too, and so
                # does a kernel fault rcud reported (cudaGraphsPerfScaling
                # checks no error and exits 0 after one).
                # The note: rcud's or CUDA's first error line (stderr and
                # stdout interleave out of order), else the last lines.
                note="$(grep -m1 -E '^rcud|[Ee]rror|FAIL|Assertion|Segmentation' "$lg" || true)"
                [[ -n "$note" ]] || note="$( (grep -v '^[[:space:]]*$' "$lg" || true) | tail -n 3 | tr '\n' ' ')"
                status="FAIL"; note="exit $rc: $(printf '%s' "$note" | clean)"
            fi
        fi
        # Replace this sample's row for this configuration.
        if [[ -f "$tsv" ]]; then
            awk -F'\t' -v s="$s" -v c="$cfg" '!($1==s && $3==c)' "$tsv" >"$tsv.tmp" && mv "$tsv.tmp" "$tsv"
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$f" "$cfg" "$status" "$secs" "$note" >>"$tsv"
    done < <(list_samples)
}

# results.md from results.tsv: one row per sample, both configurations.
write_markdown() {
    local md="$out/results.md"
    [[ -f "$tsv" ]] || return 0
    {
        echo "# cuda-samples under rcud"
        echo
        echo "- cuda-samples: $(git -C "$src" log --format='%h %cs' -1 2>/dev/null || echo unknown)"
        echo "- rcud: $RCUD ($(git -C "$repo_root" log --oneline -1 --format='%h' 2>/dev/null || echo unknown) at the time of writing)"
        echo "- run: $(date -u '+%Y-%m-%d %H:%M UTC'), timeout ${TIMEOUT} s, sm_80"
        echo
        for cfg in on off; do
            awk -F'\t' -v c="$cfg" '$3==c {n[$4]++; t++} END {
                if (t) { printf "rdc %s:", c; for (k in n) printf " %s %d,", k, n[k]; printf " of %d\n\n", t } }' "$tsv"
        done
        echo "| sample | folder | rdc on | rdc off | time (s, on / off) | note |"
        echo "|---|---|---|---|---|---|"
        while IFS=$'\t' read -r f s t; do
            awk -F'\t' -v s="$s" -v f="$f" '
                $1==s { st[$3]=$4; tm[$3]=$5; if ($6 != "" && note == "") note=$6 }
                END {
                    on = (("on" in st) ? st["on"] : "not run"); off = (("off" in st) ? st["off"] : "not run")
                    printf "| %s | %s | %s | %s | %s / %s | %s |\n", s, f, on, off, \
                        (tm["on"] == "" ? "-" : tm["on"]), (tm["off"] == "" ? "-" : tm["off"]), note
                }' "$tsv"
        done < <(list_samples)
    } >"$md"
    log "wrote $md and $tsv"
}

for cfg in $CONFIGS; do
    [[ " $STEPS " == *" build "* ]] && build_config "$cfg"
    [[ " $STEPS " == *" run "* ]] && run_config "$cfg"
    write_markdown
done

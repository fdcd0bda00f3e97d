#!/usr/bin/env python3
"""Writes the export lists of the NVIDIA libraries rcud replaces.

One generator for every replaced library; `cuda-shim/build.rs` turns each list
into exported stubs, symbol versions and (for the driver) the
`cuGetProcAddress` table. The lists are checked in under `cuda-shim/exports/`
so that a build needs no CUDA toolkit; rerun this script when the toolkit the
tests install moves to a new version:

    scripts/gen-exports.py            # toolkit from scripts/ensure-nvcc.sh

Sources, all from the PyPI toolkit:

- `libcuda.so.1` (`exports/cuda.txt`): every function `cuda.h` declares, with
  the header preprocessed three ways (default, per-thread default stream, and
  NVIDIA's internal view, which declares the legacy unversioned names). The
  union is what the real driver exports: `cuMemAlloc` and `cuMemAlloc_v2`,
  `cuMemcpyHtoD_v2` and `cuMemcpyHtoD_v2_ptds`, ...
- `cuGetProcAddress` (`exports/cuda-procs.txt`): `cudaTypedefs.h` names one
  function-pointer type per (function, CUDA version it appeared in, stream
  flavour), e.g. `PFN_cuMemAlloc_v3020`. The n-th version of a function (in
  version order) is the symbol with suffix `_v<n>` (none for the first); a
  per-thread-stream version is the newest default one at or before it, plus
  `_ptds`/`_ptsz`. Every row is checked against `cuda.txt`.
- `CUresult` (`exports/cuda-errors.txt`): value and name of every driver
  error code, for `cuGetErrorName`.
- `libcudart.so.13` (`exports/cudart13.txt`): the dynamic symbols of NVIDIA's
  library itself, which the PyPI runtime package ships.
- The math libraries (`exports/cublas.txt`, `cublasLt.txt`, `cufft.txt`,
  `curand.txt`, `cusparse.txt`, `cusolver.txt`): every function their
  headers declare (from the PyPI wheels, `scripts/ensure-cuda-libs.py`), one
  per line with what it returns: `status` (the library's status enum),
  `void`, `float` (a floating-point or complex value) or `value` (anything
  else: a pointer, a size, an int), so that a stub returns something sane.
- `libnvidia-ml.so.1` (`exports/nvml.txt`): every function `nvml.h` declares
  (from the `nvidia-nvml-dev` wheel), read twice: as applications see it,
  where `nvmlInit` is a macro for `nvmlInit_v2`, and with
  `NVML_NO_UNVERSIONED_FUNC_DEFS`, which declares the older unversioned
  names that the real library still exports; same format as the math lists.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPORTS = ROOT / "cuda-shim" / "exports"

DECLARATION = re.compile(r"\bCUresult\s+(cu\w+)\s*\(")
PFN = re.compile(r"\bPFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\)")
# Typedef headers of the driver's interop and profiler functions; Windows-only
# ones (`cuWGL*`) are left out.
INTEROP_TYPEDEFS = ["cudaGLTypedefs.h", "cudaEGLTypedefs.h", "cudaVDPAUTypedefs.h", "cudaProfilerTypedefs.h"]
WINDOWS_ONLY = ("cuWGL",)
CUDA_VERSION = re.compile(r"#define\s+CUDA_VERSION\s+(\d+)")
ERROR_ENUM = re.compile(r"typedef enum cudaError_enum \{(.*?)\} CUresult;", re.S)
ATTRIBUTE_ENUM = re.compile(r"typedef enum CUdevice_attribute_enum \{(.*?)\} CUdevice_attribute;", re.S)
ATTRIBUTE_VALUE = re.compile(r"^\s*CU_DEVICE_ATTRIBUTE_\w+\s*=\s*(\d+)", re.M)
ERROR_VALUE = re.compile(r"^\s*(CUDA_\w+)\s*=\s*(\d+)", re.M)


def toolkit_root() -> Path:
    nvcc = subprocess.run(
        [str(ROOT / "scripts" / "ensure-nvcc.sh")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return Path(nvcc).resolve().parent.parent


def preprocess(include: Path, defines: list[str]) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("gen-exports: needs a C compiler (cc) to preprocess cuda.h")
    return subprocess.run(
        [cc, "-E", "-x", "c", f"-I{include}", *defines, "-"],
        input="#include <cuda.h>\n",
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def driver_exports(include: Path) -> list[str]:
    names: set[str] = set()
    for defines in ([], ["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"], ["-D__CUDA_API_VERSION_INTERNAL"]):
        names.update(DECLARATION.findall(preprocess(include, defines)))
    return sorted(names)


def proc_table(typedefs: str, exports: set[str] | None) -> list[tuple[str, int, str, str]]:
    """(name, version, flavour, symbol) rows; flavour is `default` or `ptds`.
    Every symbol must be in `exports`, unless that is None."""
    versions: dict[str, set[int]] = defaultdict(set)
    per_thread: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for name, version, suffix in PFN.findall(typedefs):
        if name.startswith(WINDOWS_ONLY):
            continue
        if suffix:
            per_thread[name].append((int(version), suffix))
        else:
            versions[name].add(int(version))
    rows = []
    problems = []
    for name in sorted(versions):
        ordered = sorted(versions[name])
        symbol_of = {v: name if i == 0 else f"{name}_v{i + 1}" for i, v in enumerate(ordered)}
        for v in ordered:
            rows.append((name, v, "default", symbol_of[v]))
        for v, suffix in sorted(set(per_thread.get(name, []))):
            base = [s for s in ordered if s <= v]
            if not base:
                problems.append(f"{name} v{v}{suffix}: no default version before it")
                continue
            rows.append((name, v, "ptds", symbol_of[base[-1]] + suffix))
    for name in sorted(set(per_thread) - set(versions)):
        problems.append(f"{name}: only per-thread-stream versions")
    for name, v, flavour, symbol in rows:
        if exports is not None and symbol not in exports:
            problems.append(f"{name} v{v} ({flavour}) -> {symbol}, which cuda.h does not declare")
    if problems:
        sys.exit("gen-exports: cudaTypedefs.h and cuda.h disagree:\n  " + "\n  ".join(problems))
    return rows


def driver_errors(cuda_h: str) -> list[str]:
    body = ERROR_ENUM.search(cuda_h)
    if body is None:
        sys.exit("gen-exports: no `enum cudaError_enum` in cuda.h")
    return [f"{value} {name}" for name, value in ERROR_VALUE.findall(body.group(1))]


def library_exports(library: Path) -> list[str]:
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], check=True, capture_output=True, text=True
    ).stdout
    names = set()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3:
            names.add(parts[2].split("@")[0])
    return sorted(names)


# Math library and NVML: (export list, its status type, headers declaring
# its functions, sets of -D flags whose declarations are united).
MATH_LIBRARIES = [
    ("cublas.txt", "cublasStatus_t", ["cublas.h", "cublas_api.h", "cublasXt.h"], [[]]),
    ("cublasLt.txt", "cublasStatus_t", ["cublasLt.h"], [[]]),
    ("cufft.txt", "cufftResult", ["cufft.h", "cufftXt.h"], [[]]),
    ("curand.txt", "curandStatus_t", ["curand.h"], [[]]),
    ("cusparse.txt", "cusparseStatus_t", ["cusparse.h"], [[]]),
    # cusolver_common.h declares cusolverGetProperty/GetVersion, which CuPy links.
    ("cusolver.txt", "cusolverStatus_t", ["cusolver_common.h", "cusolverDn.h", "cusolverSp.h",
                                           "cusolverRf.h", "cusolverSp_LOWLEVEL_PREVIEW.h"], [[]]),
    ("nvml.txt", "nvmlReturn_t", ["nvml.h"], [[], ["-DNVML_NO_UNVERSIONED_FUNC_DEFS"]]),
]
# A declaration after preprocessing: return type, then the function's name.
FUNCTION = re.compile(r"^([A-Za-z_][\w\s\*]*?)\s*\b((?:cublas|cufft|curand|cusparse|cusolver|nvml)\w*)\s*\(")
ATTRIBUTE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")
FLOATING = ("float", "double", "cuComplex", "cuDoubleComplex", "cuFloatComplex")


def math_exports(
    toolkit_include: Path, include: Path, headers: list[str], status: str, variants: list[list[str]]
) -> list[str]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("gen-exports: needs a C compiler (cc) to preprocess the headers")
    found: dict[str, str] = {}
    for header, defines in ((h, d) for h in headers for d in variants):
        text = subprocess.run(
            [cc, "-E", "-x", "c", *defines, f"-I{include}", f"-I{toolkit_include}", "-"],
            input=f"#include <{header}>\n",
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        # Only what the library's own headers declare (they include the
        # runtime's headers and each other's), by the preprocessor's line
        # markers.
        own, current = [], ""
        for line in text.splitlines():
            marker = re.match(r'^# \d+ "(.*?)"', line)
            if marker:
                current = Path(marker.group(1)).name
            elif current in headers:
                own.append(line)
        text = "\n".join(own)
        for statement in re.split(r"[;{}]", text):
            statement = " ".join(statement.split())
            statement = ATTRIBUTE.sub("", statement).strip()
            statement = re.sub(r"^(extern|static|inline|__inline__)\s+", "", statement)
            if statement.startswith("typedef") or "(*" in statement:
                continue
            m = FUNCTION.match(statement)
            if not m:
                continue
            ret = " ".join(m.group(1).replace("const", "").split())
            if ret == status:
                kind = "status"
            elif ret == "void":
                kind = "void"
            elif ret in FLOATING:
                kind = "float"
            else:
                kind = "value"
            found[m.group(2)] = kind
    return [f"{name} {kind}" for name, kind in sorted(found.items())]


def write(path: Path, header: list[str], lines: list[str]) -> None:
    text = "".join(f"# {h}\n" for h in header) + "".join(f"{line}\n" for line in lines)
    path.write_text(text)
    print(f"gen-exports: wrote {path.relative_to(ROOT)} ({len(lines)} entries)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--toolkit", type=Path, help="CUDA toolkit root (default: the tests' PyPI toolkit)")
    args = parser.parse_args()
    root = args.toolkit or toolkit_root()
    include = root / "include"
    cuda_h = (include / "cuda.h").read_text()
    version = CUDA_VERSION.search(cuda_h)
    version_text = version.group(1) if version else "unknown"
    generated = f"Generated by scripts/gen-exports.py from the CUDA {version_text} toolkit; do not edit."

    exports = driver_exports(include)
    # The interop and profiler functions live in headers of their own, which
    # need OpenGL, EGL or VDPAU headers (or, for cudaProfiler.h, are not in
    # the PyPI toolkit) to preprocess; their typedef headers name them.
    interop = "".join((include / h).read_text() for h in INTEROP_TYPEDEFS)
    interop_rows = proc_table(interop, None)
    exports = sorted(set(exports) | {row[3] for row in interop_rows})
    attributes = ATTRIBUTE_ENUM.search(cuda_h)
    if attributes is None:
        sys.exit("gen-exports: no `enum CUdevice_attribute_enum` in cuda.h")
    attribute_max = max(int(v) for v in ATTRIBUTE_VALUE.findall(attributes.group(1))) + 1
    write(
        EXPORTS / "cuda.txt",
        [
            generated,
            "Functions of libcuda.so.1, from cuda.h.",
            f"CUDA_VERSION {version_text}",
            f"CU_DEVICE_ATTRIBUTE_MAX {attribute_max}",
        ],
        exports,
    )
    rows = proc_table((include / "cudaTypedefs.h").read_text(), set(exports)) + interop_rows
    write(
        EXPORTS / "cuda-procs.txt",
        [generated, "cuGetProcAddress: name, CUDA version, default|ptds, symbol (cudaTypedefs.h)."],
        [f"{n} {v} {f} {s}" for n, v, f, s in rows],
    )
    write(EXPORTS / "cuda-errors.txt", [generated, "CUresult values and names (cuda.h)."], driver_errors(cuda_h))
    cudart = library_exports(root / "lib" / "libcudart.so.13")
    write(EXPORTS / "cudart13.txt", [generated, "Dynamic symbols of NVIDIA's libcudart.so.13."], cudart)

    libs = Path(
        subprocess.run(
            [str(ROOT / "scripts" / "ensure-cuda-libs.py")], check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    wheels = (libs.parent / "stamp").read_text()
    for list_name, status, headers, variants in MATH_LIBRARIES:
        write(
            EXPORTS / list_name,
            [
                f"Generated by scripts/gen-exports.py from the headers of {wheels}; do not edit.",
                f"Functions of {', '.join(headers)}: name, what it returns (status|void|float|value).",
            ],
            math_exports(include, libs, headers, status, variants),
        )


if __name__ == "__main__":
    main()

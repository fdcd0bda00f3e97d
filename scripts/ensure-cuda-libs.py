#!/usr/bin/env python3
"""Fetches the C headers of NVIDIA's math libraries (cuBLAS, cuBLASLt, cuFFT,
cuRAND, cuSPARSE, cuSOLVER) and of NVML (`nvml.h`) from their PyPI wheels into `.cuda-libs/include`
and prints that directory.

The wheels hold the libraries too (over a gigabyte together), which rcud
replaces and never needs; only the headers are read, by HTTP range requests
into the wheel's zip directory, so a fresh machine downloads a few
megabytes. `scripts/gen-exports.py` reads them to write the export lists, and
the end-to-end tests compile their library programs against them.

    scripts/ensure-cuda-libs.py            # prints <repo>/.cuda-libs/include
    scripts/ensure-cuda-libs.py --curand   # also NVIDIA's libcurand.so.10 and
                                           # libcudart.so.13; prints .cuda-libs/lib

`--curand` extracts NVIDIA's own cuRAND (and the CUDA runtime it links to)
into `.cuda-libs/lib` (about 100 MB, 75 MB downloaded): its host generators
(`curandCreateGeneratorHost`) run on the CPU, so `math/tests/curand_oracle.rs`
compares rcud's generators with them on a machine without a GPU.
"""

from __future__ import annotations

import io
import json
import os
import sys
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEST = ROOT / ".cuda-libs"
# Pinned so that the export lists and the tests see the same headers.
WHEELS = {
    "nvidia-cublas": "13.10.0.20",
    "nvidia-cufft": "12.5.0.14",
    "nvidia-curand": "10.4.5.25",
    "nvidia-cusparse": "12.9.4.2",
    "nvidia-cusolver": "12.4.1.2",
    "nvidia-nvml-dev": "13.4.92",
}
# NVIDIA's libraries `--curand` extracts: (wheel, version, file). The runtime
# is the one `scripts/ensure-nvcc.sh` installs.
CURAND_LIBS = [
    ("nvidia-curand", WHEELS["nvidia-curand"], "libcurand.so.10"),
    ("nvidia-cuda-runtime", "13.5.37", "libcudart.so.13"),
]
INDEX = "https://pypi.org/pypi/{name}/json"


class RemoteFile(io.RawIOBase):
    """A read-only, seekable view of a URL, read by HTTP range requests."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos = url, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buf) -> int:  # type: ignore[override]
        want = min(len(buf), self.size - self.pos)
        if want <= 0:
            return 0
        request = urllib.request.Request(
            self.url, headers={"Range": f"bytes={self.pos}-{self.pos + want - 1}"}
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            data = reply.read(want)
        buf[: len(data)] = data
        self.pos += len(data)
        return len(data)


def wheel_url(name: str, version: str) -> tuple[str, int]:
    index = INDEX.format(name=name)
    with urllib.request.urlopen(index, timeout=60) as reply:
        meta = json.load(reply)
    for f in meta["releases"].get(version, []):
        if f["filename"].endswith(".whl") and "x86_64" in f["filename"]:
            return urllib.parse.urljoin(index, f["url"]), int(f["size"])
    sys.exit(f"ensure-cuda-libs: no x86_64 wheel of {name} {version}")


def fetch_headers(name: str, version: str, include: Path) -> int:
    url, size = wheel_url(name, version)
    count = 0
    with zipfile.ZipFile(io.BufferedReader(RemoteFile(url, size), 1 << 20)) as wheel:
        for member in wheel.infolist():
            parts = Path(member.filename).parts
            if "include" not in parts or member.is_dir():
                continue
            relative = Path(*parts[parts.index("include") + 1 :])
            target = include / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(wheel.read(member))
            count += 1
    return count


def fetch_library(name: str, version: str, file: str, lib: Path) -> None:
    url, size = wheel_url(name, version)
    with zipfile.ZipFile(io.BufferedReader(RemoteFile(url, size), 1 << 22)) as wheel:
        for member in wheel.infolist():
            if Path(member.filename).name == file:
                lib.mkdir(parents=True, exist_ok=True)
                # A name of this process's own, replaced atomically: other
                # processes may fetch the same library at the same time.
                partial = lib / f".{file}.{os.getpid()}.partial"
                partial.write_bytes(wheel.read(member))
                os.replace(partial, lib / file)
                return
    sys.exit(f"ensure-cuda-libs: no {file} in {name} {version}")


def ensure_curand() -> Path:
    lib = DEST / "lib"
    stamp = lib / "stamp"
    wanted = json.dumps(CURAND_LIBS)
    if not (stamp.is_file() and stamp.read_text() == wanted):
        for name, version, file in CURAND_LIBS:
            fetch_library(name, version, file, lib)
            print(f"ensure-cuda-libs: {name} {version}: {file}", file=sys.stderr)
        stamp.write_text(wanted)
    return lib


def main() -> None:
    include = DEST / "include"
    stamp = DEST / "stamp"
    wanted = json.dumps(WHEELS, sort_keys=True)
    if not (stamp.is_file() and stamp.read_text() == wanted):
        include.mkdir(parents=True, exist_ok=True)
        for name, version in WHEELS.items():
            n = fetch_headers(name, version, include)
            print(f"ensure-cuda-libs: {name} {version}: {n} headers", file=sys.stderr)
        stamp.write_text(wanted)
    if sys.argv[1:] == ["--curand"]:
        print(ensure_curand())
    elif sys.argv[1:]:
        sys.exit(f"usage: {sys.argv[0]} [--curand]")
    else:
        print(include)


if __name__ == "__main__":
    main()

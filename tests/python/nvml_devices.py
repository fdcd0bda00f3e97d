"""NVML through nvidia-ml-py (pynvml) under `rcud run`: every call a
monitoring tool makes, checked against what the server reports.

Usage: rcud run -- python nvml_devices.py EXPECTED_JSON
EXPECTED_JSON (from the test) names the devices the server has:
{"count": N, "names": [...], "total": [...bytes]}; the script also holds
device memory through the CUDA runtime (ctypes on libcudart.so.13, which
rcud run provides) and checks that NVML sees it and this process.
"""

import ctypes
import json
import os
import sys
import time

import pynvml

expected = json.loads(sys.argv[1])

# Before nvmlInit every call fails with NVML_ERROR_UNINITIALIZED.
try:
    pynvml.nvmlDeviceGetCount()
    raise SystemExit("nvmlDeviceGetCount before nvmlInit succeeded")
except pynvml.NVMLError as e:
    assert e.value == pynvml.NVML_ERROR_UNINITIALIZED, e

pynvml.nvmlInit()
count = pynvml.nvmlDeviceGetCount()
assert count == expected["count"], (count, expected)

uuids = []
for i in range(count):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    name = pynvml.nvmlDeviceGetName(h)
    assert name == expected["names"][i], (name, expected["names"][i])
    uuid = pynvml.nvmlDeviceGetUUID(h)
    assert uuid.startswith("GPU-") and len(uuid) == 40, uuid
    uuids.append(uuid)
    same = pynvml.nvmlDeviceGetHandleByUUID(uuid)
    assert pynvml.nvmlDeviceGetIndex(same) == i
    mem = pynvml.nvmlDeviceGetMemoryInfo(h)
    assert mem.total == expected["total"][i], (mem.total, expected["total"][i])
    assert mem.free + mem.used == mem.total
    util = pynvml.nvmlDeviceGetUtilizationRates(h)
    assert 0 <= util.gpu <= 100 and 0 <= util.memory <= 100, (util.gpu, util.memory)
    pci = pynvml.nvmlDeviceGetPciInfo(h)
    assert pci.busId.endswith(".0") and len(pci.busId) == 16, pci.busId
    assert pynvml.nvmlDeviceGetHandleByPciBusId(pci.busId) is not None
    mode = pynvml.nvmlDeviceGetComputeMode(h)
    assert mode == pynvml.NVML_COMPUTEMODE_DEFAULT, mode
    major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
    assert major >= 1, (major, minor)
    print(f"device {i}: {name} {uuid} bus {pci.busId} cc {major}.{minor} "
          f"memory {mem.used}/{mem.total} util {util.gpu}/{util.memory}")
assert len(set(uuids)) == count, uuids

try:
    pynvml.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000")
    raise SystemExit("an unknown UUID found a device")
except pynvml.NVMLError as e:
    assert e.value == pynvml.NVML_ERROR_NOT_FOUND, e

h0 = pynvml.nvmlDeviceGetHandleByIndex(0)
# NVML alone creates no context: no process holds the GPU yet.
before = pynvml.nvmlDeviceGetComputeRunningProcesses(h0)
assert all(p.pid != os.getpid() for p in before), before
used_before = pynvml.nvmlDeviceGetMemoryInfo(h0).used

# Hold 64 MiB through the CUDA runtime, and keep the GPU busy a little.
cudart = ctypes.CDLL("libcudart.so.13")
ptr = ctypes.c_void_p()
size = 64 << 20
rc = cudart.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(size))
assert rc == 0, rc
for _ in range(20):
    assert cudart.cudaMemset(ptr, 1, ctypes.c_size_t(size)) == 0
assert cudart.cudaDeviceSynchronize() == 0

mem = pynvml.nvmlDeviceGetMemoryInfo(h0)
assert mem.used >= used_before + size, (mem.used, used_before)
procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h0)
mine = [p for p in procs if p.pid == os.getpid()]
assert len(mine) == 1, (os.getpid(), [(p.pid, p.usedGpuMemory) for p in procs])
assert mine[0].usedGpuMemory >= size, mine[0].usedGpuMemory
util = pynvml.nvmlDeviceGetUtilizationRates(h0)
assert util.gpu > 0, "20 memsets of 64 MiB left the GPU idle"
print(f"held {size} bytes: used {mem.used}, process {mine[0].pid} "
      f"with {mine[0].usedGpuMemory}, utilisation {util.gpu}% gpu {util.memory}% memory")

assert cudart.cudaFree(ptr) == 0
pynvml.nvmlShutdown()
try:
    pynvml.nvmlShutdown()
    raise SystemExit("a second nvmlShutdown succeeded")
except pynvml.NVMLError as e:
    assert e.value == pynvml.NVML_ERROR_UNINITIALIZED, e
print("nvml: ok")

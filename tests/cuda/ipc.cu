// CUDA IPC between two processes of one client host, as NVIDIA's simpleIPC
// uses it: the parent exports an allocation and an interprocess event; a
// child process (forked before either touches CUDA, so each has its own
// context and connection) opens both, waits on the event for the parent's
// kernel that fills the memory, runs a kernel of its own on it and records
// the event; the parent waits on the event and sees the child's writes.
// Also the errors CUDA gives.
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "check.h"

__global__ void slow_fill(int *x, int n) {
    long long end = clock64() + 200000;
    while (clock64() < end) {
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2 * i;
}

__global__ void add(int *x, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += v;
}

static const int n = 1 << 16;

static void read_all(int fd, void *p, size_t len) {
    char *c = (char *)p;
    while (len > 0) {
        ssize_t got = read(fd, c, len);
        EXPECT(got > 0, "pipe read");
        c += got;
        len -= (size_t)got;
    }
}

static int child(int from_parent, int to_parent) {
    cudaIpcMemHandle_t handle;
    cudaIpcEventHandle_t event_handle;
    read_all(from_parent, &handle, sizeof handle);
    read_all(from_parent, &event_handle, sizeof event_handle);
    int *p = nullptr;
    CHECK(cudaIpcOpenMemHandle((void **)&p, handle, cudaIpcMemLazyEnablePeerAccess));
    cudaEvent_t filled;
    CHECK(cudaIpcOpenEventHandle(&filled, event_handle));
    // The parent's kernel may still run: wait for its record.
    CHECK(cudaStreamWaitEvent(0, filled, 0));
    std::vector<int> host(n);
    CHECK(cudaMemcpy(host.data(), p, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) EXPECT(host[i] == 2 * i, "child reads x[%d] = %d", i, host[i]);
    add<<<(n + 255) / 256, 256>>>(p, n, 1000);
    CHECK(cudaEventRecord(filled, 0));
    CHECK(cudaDeviceSynchronize());
    printf("child: opened the parent's allocation and event, read it after the event and ran a kernel on it: ok\n");
    EXPECT_ERR_AS("child: cudaFree of opened memory", cudaFree(p), cudaErrorInvalidValue);
    CHECK(cudaIpcCloseMemHandle(p));
    CHECK(cudaEventDestroy(filled));
    EXPECT_ERR_AS("child: close it twice", cudaIpcCloseMemHandle(p), cudaErrorInvalidValue);
    cudaIpcMemHandle_t forged;
    memset(&forged, 0x5a, sizeof forged);
    EXPECT_ERR_AS("child: a forged handle", cudaIpcOpenMemHandle((void **)&p, forged, 0),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("child: unknown flags", cudaIpcOpenMemHandle((void **)&p, handle, 2),
                  cudaErrorInvalidValue);
    fflush(stdout);
    char done = 'k';
    EXPECT(write(to_parent, &done, 1) == 1, "pipe write");
    return 0;
}

int main() {
    int down[2], up[2];
    EXPECT(pipe(down) == 0 && pipe(up) == 0, "pipes");
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork");
    if (pid == 0) return child(down[0], up[1]);

    int *p = nullptr;
    CHECK(cudaMalloc(&p, n * sizeof(int)));
    cudaEvent_t filled, plain;
    EXPECT_ERR_AS("an interprocess event with timing",
                  cudaEventCreateWithFlags(&plain, cudaEventInterprocess), cudaErrorInvalidValue);
    CHECK(cudaEventCreateWithFlags(&filled, cudaEventInterprocess | cudaEventDisableTiming));
    CHECK(cudaEventCreate(&plain));
    cudaIpcEventHandle_t event_handle;
    EXPECT_ERR_AS("the handle of an event that is not interprocess",
                  cudaIpcGetEventHandle(&event_handle, plain), cudaErrorInvalidResourceHandle);
    CHECK(cudaIpcGetEventHandle(&event_handle, filled));
    slow_fill<<<(n + 255) / 256, 256>>>(p, n);
    CHECK(cudaEventRecord(filled, 0));
    std::vector<int> host(n);
    cudaIpcMemHandle_t handle, again;
    CHECK(cudaIpcGetMemHandle(&handle, p));
    CHECK(cudaIpcGetMemHandle(&again, p));
    EXPECT(memcmp(&handle, &again, sizeof handle) == 0, "one handle per allocation");
    int *same = nullptr;
    EXPECT_ERR_AS("open a handle in the process that exported it",
                  cudaIpcOpenMemHandle((void **)&same, handle, 0), cudaErrorInvalidValue);
    EXPECT(write(down[1], &handle, sizeof handle) == (ssize_t)sizeof handle, "pipe write");
    EXPECT(write(down[1], &event_handle, sizeof event_handle) == (ssize_t)sizeof event_handle,
           "pipe write");
    char done = 0;
    read_all(up[0], &done, 1);
    // The child recorded the event after its kernel.
    CHECK(cudaEventSynchronize(filled));
    CHECK(cudaEventQuery(filled));
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the child failed (status %d)", status);
    CHECK(cudaMemcpy(host.data(), p, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
        EXPECT(host[i] == 2 * i + 1000, "parent reads x[%d] = %d", i, host[i]);
    printf("parent: sees the child's writes: ok\n");
    EXPECT_ERR_AS("export memory that is not device memory",
                  cudaIpcGetMemHandle(&again, host.data()), cudaErrorInvalidValue);
    CHECK(cudaEventDestroy(filled));
    CHECK(cudaEventDestroy(plain));
    CHECK(cudaFree(p));
    printf("PASS\n");
    return 0;
}

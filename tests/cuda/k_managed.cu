// Managed memory as programs use it: cudaMallocManaged and __managed__
// variables shared by host and kernels, partial host updates between
// launches, a host that reads a few elements of a large result, host
// threads touching managed memory at once, copies and memsets on managed
// memory, stream attachment (host-attached memory stays usable while
// kernels run), advice, prefetches and range queries.
#include <cuda_runtime.h>

#include <thread>
#include <vector>

#include "check.h"

__managed__ int counter = 5;
__managed__ float table[64];
__managed__ int tail_after_table = 7;

__global__ void scale(float *x, int n, float f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= f;
}

__global__ void fill_index(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 3 * i + 1;
}

__global__ void sum(const int *x, int n, unsigned long long *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, (unsigned long long)x[i]);
}

__global__ void touch_variables() {
    int i = threadIdx.x;
    table[i] = table[i] + i;
    if (i == 0) {
        counter += 1;
        tail_after_table *= 2;
    }
}

__global__ void spin_then_add(int *x, long long cycles) {
    long long end = clock64() + cycles;
    while (clock64() < end) {
    }
    x[0] += 1;
}

static void round_trips() {
    const int n = 1 << 16;
    float *x = nullptr;
    CHECK(cudaMallocManaged(&x, n * sizeof(float)));
    for (int i = 0; i < n; ++i) x[i] = (float)i;
    float factor = 1.0f;
    for (int round = 0; round < 3; ++round) {
        scale<<<(n + 255) / 256, 256>>>(x, n, 2.0f);
        CHECK(cudaDeviceSynchronize());
        factor *= 2.0f;
        for (int i = 0; i < n; ++i) {
            float expect = (i == n / 2 && round > 0) ? -factor : i * factor;
            EXPECT(x[i] == expect, "round %d: x[%d] = %f, expected %f", round, i, x[i], expect);
        }
        // The host changes one element only; the next kernel must see it.
        x[n / 2] = -factor;
    }
    CHECK(cudaFree(x));
    printf("host and kernels share cudaMallocManaged memory: ok\n");
}

static void sparse_host_access() {
    // 64 MiB written by a kernel; the host reads a handful of elements and
    // updates one, which the next kernel must see.
    const int n = 16 << 20;
    int *x = nullptr;
    CHECK(cudaMallocManaged(&x, (size_t)n * sizeof(int)));
    fill_index<<<(n + 255) / 256, 256>>>(x, n);
    CHECK(cudaDeviceSynchronize());
    for (int i : {0, 1, 4095, 4096, n / 3, n - 1})
        EXPECT(x[i] == 3 * i + 1, "x[%d] = %d", i, x[i]);
    x[12345] = -1;
    unsigned long long *total = nullptr;
    CHECK(cudaMallocManaged(&total, sizeof(*total)));
    *total = 0;
    sum<<<(n + 255) / 256, 256>>>(x, n, total);
    CHECK(cudaDeviceSynchronize());
    unsigned long long expect = 0;
    for (long long i = 0; i < n; ++i) expect += (i == 12345) ? (unsigned long long)-1 : 3 * i + 1;
    EXPECT(*total == expect, "sum %llu, expected %llu", *total, expect);
    CHECK(cudaFree(x));
    CHECK(cudaFree(total));
    printf("sparse host reads and writes of a large managed array: ok\n");
}

static void managed_variables() {
    EXPECT(counter == 5, "counter starts at %d", counter);
    EXPECT(tail_after_table == 7, "tail starts at %d", tail_after_table);
    for (int i = 0; i < 64; ++i) table[i] = 100.0f;
    touch_variables<<<1, 64>>>();
    CHECK(cudaDeviceSynchronize());
    EXPECT(counter == 6, "counter after the kernel %d", counter);
    EXPECT(tail_after_table == 14, "tail after the kernel %d", tail_after_table);
    for (int i = 0; i < 64; ++i) EXPECT(table[i] == 100.0f + i, "table[%d] = %f", i, table[i]);
    counter = 40;
    touch_variables<<<1, 64>>>();
    CHECK(cudaDeviceSynchronize());
    EXPECT(counter == 41, "counter after a host write and a kernel %d", counter);
    printf("__managed__ variables: ok\n");
}

static void threads_touch_at_once() {
    const int n = 1 << 22;
    int *x = nullptr;
    CHECK(cudaMallocManaged(&x, (size_t)n * sizeof(int)));
    fill_index<<<(n + 255) / 256, 256>>>(x, n);
    CHECK(cudaDeviceSynchronize());
    std::vector<std::thread> threads;
    std::vector<int> bad(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([=, &bad] {
            for (int i = t; i < n; i += 4) {
                if (x[i] != 3 * i + 1) ++bad[t];
                x[i] = i;
            }
        });
    }
    for (auto &th : threads) th.join();
    for (int t = 0; t < 4; ++t) EXPECT(bad[t] == 0, "thread %d saw %d wrong values", t, bad[t]);
    unsigned long long *total = nullptr;
    CHECK(cudaMallocManaged(&total, sizeof(*total)));
    *total = 0;
    sum<<<(n + 255) / 256, 256>>>(x, n, total);
    CHECK(cudaDeviceSynchronize());
    EXPECT(*total == (unsigned long long)n * (n - 1) / 2, "sum %llu", *total);
    CHECK(cudaFree(x));
    CHECK(cudaFree(total));
    printf("four host threads reading and writing managed memory: ok\n");
}

static void copies_and_memsets() {
    const int n = 4096;
    int *m = nullptr, *d = nullptr;
    CHECK(cudaMallocManaged(&m, n * sizeof(int)));
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    for (int i = 0; i < n; ++i) m[i] = i;
    CHECK(cudaMemcpy(d, m, n * sizeof(int), cudaMemcpyDefault));
    CHECK(cudaMemset(m, 0, n * sizeof(int)));
    for (int i = 0; i < n; ++i) EXPECT(m[i] == 0, "memset: m[%d] = %d", i, m[i]);
    CHECK(cudaMemcpy(m, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) EXPECT(m[i] == i, "copy back: m[%d] = %d", i, m[i]);
    std::vector<int> host(n, -3);
    CHECK(cudaMemcpy(m + 8, host.data(), 16 * sizeof(int), cudaMemcpyHostToDevice));
    EXPECT(m[7] == 7 && m[8] == -3 && m[23] == -3 && m[24] == 24, "partial copy into managed");
    m[0] = 99;
    CHECK(cudaMemcpy(host.data(), m, n * sizeof(int), cudaMemcpyDefault));
    EXPECT(host[0] == 99 && host[8] == -3 && host[n - 1] == n - 1, "managed to host");
    CHECK(cudaFree(m));
    CHECK(cudaFree(d));
    printf("copies and memsets on managed memory: ok\n");
}

static void stream_attachment() {
    int *busy = nullptr, *mine = nullptr;
    CHECK(cudaMallocManaged(&busy, 4096));
    CHECK(cudaMallocManaged(&mine, 4096, cudaMemAttachHost));
    cudaStream_t s1, s2;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    busy[0] = 1;
    CHECK(cudaStreamAttachMemAsync(s1, busy, 0, cudaMemAttachSingle));
    spin_then_add<<<1, 1, 0, s1>>>(busy, 1000);
    // Host-attached memory is the host's while s1's kernel runs.
    for (int i = 0; i < 1024; ++i) mine[i] = i;
    long long total = 0;
    for (int i = 0; i < 1024; ++i) total += mine[i];
    EXPECT(total == 1023 * 1024 / 2, "host-attached memory total %lld", total);
    CHECK(cudaStreamSynchronize(s1));
    EXPECT(busy[0] == 2, "stream-attached memory after its stream %d", busy[0]);
    // Attached to s2, `mine` follows s2's kernels.
    CHECK(cudaStreamAttachMemAsync(s2, mine, 4096, cudaMemAttachSingle));
    spin_then_add<<<1, 1, 0, s2>>>(mine, 10);
    CHECK(cudaStreamSynchronize(s2));
    EXPECT(mine[0] == 1, "mine[0] = %d", mine[0]);
    EXPECT_ERR_AS("attach singly to the NULL stream",
                  cudaStreamAttachMemAsync(0, busy, 0, cudaMemAttachSingle),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("attach part of an allocation",
                  cudaStreamAttachMemAsync(s1, busy, 100, cudaMemAttachGlobal),
                  cudaErrorInvalidValue);
    int plain = 0;
    EXPECT_ERR_AS("attach memory that is not managed",
                  cudaStreamAttachMemAsync(s1, &plain, 0, cudaMemAttachGlobal),
                  cudaErrorInvalidValue);
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    // Back to its default (host) attachment: kernels on other streams leave it alone.
    mine[1] = 5;
    spin_then_add<<<1, 1>>>(busy, 10);
    CHECK(cudaDeviceSynchronize());
    EXPECT(mine[1] == 5 && busy[0] == 3, "after the streams went");
    CHECK(cudaFree(busy));
    CHECK(cudaFree(mine));
    printf("cudaStreamAttachMemAsync: ok\n");
}

static int range_int(cudaMemRangeAttribute attribute, const void *p, size_t count) {
    int value = -100;
    CHECK(cudaMemRangeGetAttribute(&value, sizeof(value), attribute, p, count));
    return value;
}

static void advice_and_prefetch() {
    const size_t bytes = 1 << 20;
    float *x = nullptr;
    CHECK(cudaMallocManaged(&x, bytes));
    const int n = (int)(bytes / sizeof(float));
    for (int i = 0; i < n; ++i) x[i] = 1.0f;

    EXPECT(range_int(cudaMemRangeAttributeReadMostly, x, bytes) == 0, "read-mostly unset");
    EXPECT(range_int(cudaMemRangeAttributePreferredLocation, x, bytes) == cudaInvalidDeviceId,
           "no preferred location");
    EXPECT(range_int(cudaMemRangeAttributeLastPrefetchLocation, x, bytes) == cudaInvalidDeviceId,
           "never prefetched");

    cudaMemLocation device0 = {cudaMemLocationTypeDevice, 0};
    cudaMemLocation host = {cudaMemLocationTypeHost, 0};
    CHECK(cudaMemAdvise(x, bytes, cudaMemAdviseSetReadMostly, device0));
    EXPECT(range_int(cudaMemRangeAttributeReadMostly, x, bytes) == 1, "read-mostly set");
    CHECK(cudaMemAdvise(x, bytes / 2, cudaMemAdviseSetPreferredLocation, device0));
    EXPECT(range_int(cudaMemRangeAttributePreferredLocation, x, bytes / 2) == 0,
           "preferred location of the first half");
    EXPECT(range_int(cudaMemRangeAttributePreferredLocation, x, bytes) == cudaInvalidDeviceId,
           "the whole range has no common preferred location");
    EXPECT(range_int(cudaMemRangeAttributePreferredLocationType, x, bytes / 2) ==
               cudaMemLocationTypeDevice,
           "preferred location type");
    CHECK(cudaMemAdvise(x, bytes, cudaMemAdviseSetAccessedBy, device0));
    int accessed[3] = {-100, -100, -100};
    CHECK(cudaMemRangeGetAttribute(accessed, sizeof(accessed), cudaMemRangeAttributeAccessedBy,
                                   x, bytes));
    EXPECT(accessed[0] == 0 && accessed[1] == cudaInvalidDeviceId &&
               accessed[2] == cudaInvalidDeviceId,
           "accessed by %d %d %d", accessed[0], accessed[1], accessed[2]);

    CHECK(cudaMemPrefetchAsync(x, bytes, device0, 0, 0));
    EXPECT(range_int(cudaMemRangeAttributeLastPrefetchLocation, x, bytes) == 0,
           "prefetched to device 0");
    scale<<<(n + 255) / 256, 256>>>(x, n, 3.0f);
    CHECK(cudaMemPrefetchAsync(x, bytes, host, 0, 0));
    CHECK(cudaDeviceSynchronize());
    EXPECT(range_int(cudaMemRangeAttributeLastPrefetchLocation, x, bytes) == cudaCpuDeviceId,
           "prefetched to the host");
    EXPECT(range_int(cudaMemRangeAttributeLastPrefetchLocationType, x, bytes) ==
               cudaMemLocationTypeHost,
           "last prefetch location type");
    for (int i = 0; i < n; ++i) EXPECT(x[i] == 3.0f, "x[%d] = %f after the prefetch", i, x[i]);

    void *data[2];
    int read_mostly = -1, preferred = -1;
    data[0] = &read_mostly;
    data[1] = &preferred;
    size_t sizes[2] = {sizeof(int), sizeof(int)};
    cudaMemRangeAttribute attributes[2] = {cudaMemRangeAttributeReadMostly,
                                           cudaMemRangeAttributePreferredLocation};
    CHECK(cudaMemRangeGetAttributes(data, sizes, attributes, 2, x, bytes / 4));
    EXPECT(read_mostly == 1 && preferred == 0, "attributes %d %d", read_mostly, preferred);

    CHECK(cudaMemAdvise(x, bytes, cudaMemAdviseUnsetReadMostly, device0));
    EXPECT(range_int(cudaMemRangeAttributeReadMostly, x, bytes) == 0, "read-mostly unset again");

    int plain[4];
    EXPECT_ERR_AS("advice on memory that is not managed",
                  cudaMemAdvise(plain, sizeof(plain), cudaMemAdviseSetReadMostly, device0),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("a range past the allocation",
                  cudaMemPrefetchAsync(x, bytes + 4096, device0, 0, 0), cudaErrorInvalidValue);
    cudaMemLocation nowhere = {cudaMemLocationTypeDevice, 42};
    EXPECT_ERR_AS("a prefetch to a device that does not exist",
                  cudaMemPrefetchAsync(x, bytes, nowhere, 0, 0), cudaErrorInvalidDevice);
    int word = 0;
    EXPECT_ERR_AS("a range attribute of 2 bytes",
                  cudaMemRangeGetAttribute(&word, 2, cudaMemRangeAttributeReadMostly, x, bytes),
                  cudaErrorInvalidValue);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    void *ptrs[1] = {x};
    size_t counts[1] = {bytes};
    size_t first[1] = {0};
    EXPECT_ERR_AS("a batched prefetch without concurrent managed access",
                  cudaMemPrefetchBatchAsync(ptrs, counts, 1, &device0, first, 1, 0, s),
                  cudaErrorNotSupported);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(x));
    printf("advice, prefetches and range attributes: ok\n");
}

int main() {
    int managed = 0, concurrent = 1;
    CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
    CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
    EXPECT(managed == 1 && concurrent == 0, "managed %d, concurrent %d", managed, concurrent);
    round_trips();
    sparse_host_access();
    managed_variables();
    threads_touch_at_once();
    copies_and_memsets();
    stream_attachment();
    advice_and_prefetch();
    printf("PASS\n");
    return 0;
}

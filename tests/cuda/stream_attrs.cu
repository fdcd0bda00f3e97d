// Stream attributes (the pattern of NVIDIA's simpleAttributes sample): an
// access-policy window set on a stream, read back and copied to another
// stream, with CUDA's checks of its fields; the synchronization policy,
// the priority (the stream's own) and the memory-synchronization domain.
#include <cuda_runtime.h>

#include "check.h"

__global__ void touch(int *data, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += i;
}

int main() {
    int dev = 0;
    CHECK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, dev));
    int max_window = 0;
    CHECK(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev));
    EXPECT(max_window > 0 && max_window == prop.accessPolicyMaxWindowSize, "window size %d",
           max_window);
    EXPECT(prop.persistingL2CacheMaxSize > 0, "persisting L2 %d", prop.persistingL2CacheMaxSize);
    CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, prop.persistingL2CacheMaxSize));

    cudaStream_t s, t;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaStreamCreate(&t));
    const int n = 4096;
    int *d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMemsetAsync(d, 0, n * sizeof(int), s));

    // A fresh stream: no window, the automatic synchronization policy.
    cudaStreamAttrValue v = {};
    CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.base_ptr == nullptr && v.accessPolicyWindow.num_bytes == 0,
           "a fresh stream has a window");
    CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &v));
    // (CUDA 13.0's runtime reports -1 for a policy never set, on an H200.)
    EXPECT(v.syncPolicy == cudaSyncPolicyAuto || (int)v.syncPolicy == -1, "sync policy %d",
           (int)v.syncPolicy);

    cudaStreamAttrValue w = {};
    w.accessPolicyWindow.base_ptr = d;
    w.accessPolicyWindow.num_bytes = n * sizeof(int);
    w.accessPolicyWindow.hitRatio = 0.75f;
    w.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    w.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &w));
    CHECK(cudaCtxResetPersistingL2Cache());
    touch<<<n / 256, 256, 0, s>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));
    v = {};
    CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.base_ptr == d && v.accessPolicyWindow.num_bytes == n * sizeof(int) &&
               v.accessPolicyWindow.hitRatio == 0.75f &&
               v.accessPolicyWindow.hitProp == cudaAccessPropertyPersisting &&
               v.accessPolicyWindow.missProp == cudaAccessPropertyStreaming,
           "window read back differs");
    printf("access-policy window: ok\n");

    // CUDA's checks of a window.
    cudaStreamAttrValue bad = w;
    bad.accessPolicyWindow.hitRatio = 1.5f;
    EXPECT_ERR_AS("hitRatio 1.5",
                  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &bad),
                  cudaErrorInvalidValue);
    bad = w;
    bad.accessPolicyWindow.num_bytes = (size_t)max_window + 1;
    EXPECT_ERR_AS("a window over cudaDevAttrMaxAccessPolicyWindowSize",
                  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &bad),
                  cudaErrorInvalidValue);
    bad = w;
    bad.accessPolicyWindow.missProp = cudaAccessPropertyPersisting;
    EXPECT_ERR_AS("missProp persisting",
                  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &bad),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("cooperative on a stream",
                  cudaStreamSetAttribute(s, cudaLaunchAttributeCooperative, &w),
                  cudaErrorInvalidValue);
    // The window still holds what was last set.
    CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.hitRatio == 0.75f, "a refused window was kept");

    // Synchronization policy, priority, memory-synchronization domain.
    cudaStreamAttrValue p = {};
    p.syncPolicy = cudaSyncPolicyBlockingSync;
    CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &p));
    p.syncPolicy = (cudaSynchronizationPolicy)9;
    EXPECT_ERR_AS("sync policy 9",
                  cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &p),
                  cudaErrorInvalidValue);
    int least, greatest;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    p.priority = greatest;
    CHECK(cudaStreamSetAttribute(s, cudaStreamAttributePriority, &p));
    int prio = 0;
    CHECK(cudaStreamGetPriority(s, &prio));
    EXPECT(prio == greatest, "priority %d, expected %d", prio, greatest);
    p = {};
    CHECK(cudaStreamGetAttribute(s, cudaStreamAttributePriority, &p));
    EXPECT(p.priority == greatest, "priority attribute %d", p.priority);
    p.memSyncDomain = cudaLaunchMemSyncDomainRemote;
    CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeMemSyncDomain, &p));
    printf("synchronization policy, priority, domain: ok\n");

    // Copied onto another stream, the priority with them.
    CHECK(cudaStreamCopyAttributes(t, s));
    CHECK(cudaStreamGetAttribute(t, cudaStreamAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.base_ptr == d && v.accessPolicyWindow.hitRatio == 0.75f,
           "copied window differs");
    CHECK(cudaStreamGetAttribute(t, cudaStreamAttributeSynchronizationPolicy, &v));
    EXPECT(v.syncPolicy == cudaSyncPolicyBlockingSync, "copied policy %d", (int)v.syncPolicy);
    CHECK(cudaStreamGetAttribute(t, cudaStreamAttributeMemSyncDomain, &v));
    EXPECT(v.memSyncDomain == cudaLaunchMemSyncDomainRemote, "copied domain");
    CHECK(cudaStreamGetPriority(t, &prio));
    EXPECT(prio == greatest, "copied priority %d", prio);
    printf("cudaStreamCopyAttributes: ok\n");

    // The legacy stream has attributes too.
    w.accessPolicyWindow.hitRatio = 0.5f;
    CHECK(cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &w));
    CHECK(cudaStreamGetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.hitRatio == 0.5f, "legacy stream window");
    w.accessPolicyWindow.num_bytes = 0;
    CHECK(cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &w));
    CHECK(cudaStreamDestroy(t));

    int host[n];
    CHECK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT(host[i] == i, "data[%d] = %d", i, host[i]);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d));
    printf("PASS\n");
    return 0;
}

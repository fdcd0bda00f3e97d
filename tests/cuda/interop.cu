// Graphics interoperability and external memory and semaphores on a
// machine whose graphics and handles belong to no CUDA device (rcud's GPUs
// are remote), and no OpenGL, EGL or VDPAU library loaded: every call
// answers what NVIDIA's runtime answers on a headless GPU machine (seen on
// an H200), never cudaErrorNotSupported, and the runtime stays usable.
// Made-up handles are no test: NVIDIA's runtime dereferences them.
#include <cuda_runtime.h>

#include "check.h"

// The interop headers need the OpenGL, EGL and VDPAU headers; the few
// declarations used are repeated here with plain types.
extern "C" {
cudaError_t cudaGLGetDevices(unsigned *count, int *devices, unsigned capacity, int list);
cudaError_t cudaGraphicsGLRegisterBuffer(cudaGraphicsResource **res, unsigned buffer,
                                         unsigned flags);
cudaError_t cudaGraphicsGLRegisterImage(cudaGraphicsResource **res, unsigned image,
                                        unsigned target, unsigned flags);
cudaError_t cudaGLSetGLDevice(int device);
cudaError_t cudaGLMapBufferObject(void **ptr, unsigned buffer);
cudaError_t cudaGLUnmapBufferObject(unsigned buffer);
cudaError_t cudaGraphicsEGLRegisterImage(cudaGraphicsResource **res, void *image, unsigned flags);
cudaError_t cudaEGLStreamConsumerConnect(void *conn, void *stream);
cudaError_t cudaEventCreateFromEGLSync(cudaEvent_t *event, void *sync, unsigned flags);
cudaError_t cudaVDPAUSetVDPAUDevice(int device, unsigned vdp_device, void *get_proc);
cudaError_t cudaGraphicsVDPAURegisterVideoSurface(cudaGraphicsResource **res, unsigned surface,
                                                  unsigned flags);
}

int main() {
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));

    // OpenGL: no OpenGL library is loaded in this program.
    unsigned gl_count = 7;
    int gl_devices[4];
    EXPECT_ERR_AS("cudaGLGetDevices", cudaGLGetDevices(&gl_count, gl_devices, 4, 1),
                  cudaErrorOperatingSystem);
    cudaGraphicsResource *res = nullptr;
    EXPECT_ERR_AS("cudaGraphicsGLRegisterBuffer", cudaGraphicsGLRegisterBuffer(&res, 1, 0),
                  cudaErrorOperatingSystem);
    EXPECT_ERR_AS("cudaGraphicsGLRegisterImage with unknown flags",
                  cudaGraphicsGLRegisterImage(&res, 1, 0x0DE1, 0x100), cudaErrorInvalidValue);
    // (cudaGLSetGLDevice and cudaVDPAUSetVDPAUDevice of a valid device:
    // NVIDIA's static runtime asks a private driver table slot, the cudart
    // interface's slot 3, that rcud does not know yet.)
    EXPECT_ERR_AS("cudaGLSetGLDevice of no device", cudaGLSetGLDevice(count),
                  cudaErrorInvalidDevice);
    void *ptr = nullptr;
    EXPECT_ERR_AS("cudaGLMapBufferObject", cudaGLMapBufferObject(&ptr, 1),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("cudaGLUnmapBufferObject", cudaGLUnmapBufferObject(1), cudaErrorInvalidValue);

    // EGL and VDPAU objects name nothing CUDA can use.
    EXPECT_ERR_AS("cudaGraphicsEGLRegisterImage of no image",
                  cudaGraphicsEGLRegisterImage(&res, nullptr, 0), cudaErrorUnknown);
    char conn[64];
    EXPECT_ERR_AS("cudaEGLStreamConsumerConnect", cudaEGLStreamConsumerConnect(conn, conn),
                  cudaErrorUnknown);
    cudaEvent_t ev;
    // EGL sync objects become events on Tegra only.
    EXPECT_ERR_AS("cudaEventCreateFromEGLSync", cudaEventCreateFromEGLSync(&ev, nullptr, 0),
                  cudaErrorNotSupported);
    EXPECT_ERR_AS("cudaVDPAUSetVDPAUDevice of no device", cudaVDPAUSetVDPAUDevice(count, 1, conn),
                  cudaErrorInvalidDevice);
    EXPECT_ERR_AS("cudaGraphicsVDPAURegisterVideoSurface",
                  cudaGraphicsVDPAURegisterVideoSurface(&res, 1, 0), cudaErrorDeviceUninitialized);

    // Graphics resources: unmapping none.
    cudaGraphicsResource_t none = nullptr;
    EXPECT_ERR_AS("cudaGraphicsUnmapResources of none", cudaGraphicsUnmapResources(0, &none, 0),
                  cudaErrorInvalidValue);

    // External memory and semaphores: no handle names a CUDA device's.
    cudaExternalMemoryHandleDesc md = {};
    md.type = cudaExternalMemoryHandleTypeOpaqueFd;
    md.handle.fd = 0;
    md.size = 4096;
    cudaExternalMemory_t mem;
    EXPECT_ERR_AS("cudaImportExternalMemory of stdin", cudaImportExternalMemory(&mem, &md),
                  cudaErrorUnknown);
    md.type = (cudaExternalMemoryHandleType)77;
    EXPECT_ERR_AS("cudaImportExternalMemory of type 77", cudaImportExternalMemory(&mem, &md),
                  cudaErrorInvalidValue);
    cudaExternalSemaphoreHandleDesc sd = {};
    sd.type = cudaExternalSemaphoreHandleTypeOpaqueFd;
    sd.handle.fd = 0;
    cudaExternalSemaphore_t sem;
    EXPECT_ERR_AS("cudaImportExternalSemaphore of stdin", cudaImportExternalSemaphore(&sem, &sd),
                  cudaErrorUnknown);
    sem = nullptr;
    cudaExternalSemaphoreSignalParams sp = {};
    EXPECT_ERR_AS("cudaSignalExternalSemaphoresAsync of none",
                  cudaSignalExternalSemaphoresAsync(&sem, &sp, 0, 0), cudaErrorInvalidValue);

    // An empty node is no external semaphore node.
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaExternalSemaphoreSignalNodeParams np = {};
    cudaGraphNode_t node;
    CHECK(cudaGraphAddEmptyNode(&node, g, nullptr, 0));
    EXPECT_ERR_AS("cudaGraphExternalSemaphoresSignalNodeGetParams of an empty node",
                  cudaGraphExternalSemaphoresSignalNodeGetParams(node, &np),
                  cudaErrorInvalidValue);
    CHECK(cudaGraphDestroy(g));

    // Still usable.
    void *d;
    CHECK(cudaMalloc(&d, 64));
    CHECK(cudaMemset(d, 0, 64));
    CHECK(cudaFree(d));
    printf("PASS\n");
    return 0;
}

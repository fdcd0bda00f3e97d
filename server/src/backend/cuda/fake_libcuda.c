// A stand-in for the NVIDIA driver library, for testing the `cuda` backend on
// hosts without a GPU: the tests build it with `cc -shared` and load it in
// place of libcuda.so.1. It implements the entry points rcud-cuda-driver
// resolves, over host memory:
//
// - device memory is malloc'd; "device addresses" are host addresses, and every
//   copy, memset and kernel access is checked against the allocations of the
//   current context (CUDA_ERROR_INVALID_VALUE, or a sticky
//   CUDA_ERROR_ILLEGAL_ADDRESS for a kernel);
// - asynchronous work is queued per stream and runs only when an event recorded
//   after it, or the stream, or the context is synchronised. A caller that
//   reuses a staging buffer before waiting for the copy that reads it sends
//   the wrong bytes, so the tests catch it;
// - two kernels exist: `_Z4fillPhmh` (fill(unsigned char *p, size_t n,
//   unsigned char v): p[0..n) = v) and `_Z5faultv` (an illegal address);
// - module variable `counter` (8 bytes) in every module.
//
// Built with -DFAKE_DEVICES=0 it reports no device; with -DFAKE_INIT_ERROR=100
// cuInit fails with that code.
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#ifndef FAKE_DEVICES
#define FAKE_DEVICES 1
#endif
#ifndef FAKE_INIT_ERROR
#define FAKE_INIT_ERROR 0
#endif

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    OK = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    INVALID_CONTEXT = 201,
    INVALID_IMAGE = 200,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    ILLEGAL_ADDRESS = 700,
};

struct ctx;

struct op {
    int kind; // 0 copy, 1 memset, 2 fill kernel, 3 fault kernel
    unsigned char *dst;
    const unsigned char *src;
    size_t n;
    unsigned char value;
};

struct stream {
    struct ctx *ctx;
    struct op ops[64];
    int queued, done;
    struct stream *next;
};

struct event {
    struct stream *stream;
    int position;
};

struct alloc {
    struct ctx *ctx;
    unsigned char *base;
    size_t size;
    int pinned;
    int imported;  // another context's memory opened through IPC: not ours to free
    struct alloc *next;
};

struct ctx {
    int sticky;
    struct stream *streams;
};

struct module {
    struct ctx *ctx;
    unsigned char *counter;
};

struct function {
    struct module *module;
    int kind; // 2 fill, 3 fault
    int max_dynamic;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *allocs;
static __thread struct ctx *current;

static struct alloc *find(struct ctx *c, const unsigned char *p, size_t n, int pinned) {
    for (struct alloc *a = allocs; a; a = a->next) {
        if (a->ctx == c && a->pinned == pinned && p >= a->base && (size_t)(p - a->base) <= a->size &&
            a->size - (size_t)(p - a->base) >= n)
            return a;
    }
    return NULL;
}

static void run(struct stream *s, int upto) {
    while (s->done < upto) {
        struct op *o = &s->ops[s->done % 64];
        switch (o->kind) {
        case 0: memcpy(o->dst, o->src, o->n); break;
        case 1:
        case 2:
            if (o->kind == 2 && !find(s->ctx, o->dst, o->n, 0)) {
                s->ctx->sticky = ILLEGAL_ADDRESS;
                break;
            }
            memset(o->dst, o->value, o->n);
#ifdef FAKE_PRINTF
            // As the driver does with device printf: through C stdio, to
            // the process's standard output.
            if (o->kind == 2) printf("fill: %zu bytes of %u\n", o->n, (unsigned)o->value);
#endif
            break;
        case 3: s->ctx->sticky = ILLEGAL_ADDRESS; break;
        }
        s->done++;
    }
}

static CUresult enqueue(struct stream *s, struct op o) {
    if (s->queued - s->done == 64) run(s, s->done + 1);
    s->ops[s->queued % 64] = o;
    s->queued++;
    return OK;
}

#define ENTER                                                                      \
    pthread_mutex_lock(&lock);                                                     \
    struct ctx *c = current;                                                       \
    CUresult r_ = OK;                                                              \
    if (!c) { r_ = INVALID_CONTEXT; goto out; }                                    \
    if (c->sticky) { r_ = c->sticky; goto out; }
#define LEAVE                                                                      \
    out:                                                                           \
    pthread_mutex_unlock(&lock);                                                   \
    return r_;
#define FAIL(code) do { r_ = (code); goto out; } while (0)

CUresult cuInit(unsigned flags) { return flags ? INVALID_VALUE : FAKE_INIT_ERROR; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }

CUresult cuGetErrorName(CUresult e, const char **name) {
    switch (e) {
    case OK: *name = "CUDA_SUCCESS"; return OK;
    case INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return OK;
    case ILLEGAL_ADDRESS: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return OK;
    case NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return OK;
    default: return INVALID_VALUE;
    }
}

CUresult cuDeviceGetCount(int *n) { *n = FAKE_DEVICES; return OK; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal < 0 || ordinal >= FAKE_DEVICES) return 101;
    *d = ordinal;
    return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    (void)d;
    switch (attr) {
    case 1: case 2: case 3: *v = 1024; return OK;
    case 4: *v = 64; return OK;
    case 5: *v = 2147483647; return OK;
    case 6: case 7: *v = 65535; return OK;
    case 8: *v = 49152; return OK;
    case 10: *v = 32; return OK;
    case 16: *v = 4; return OK;
    case 75: *v = 8; return OK;
    case 76: *v = 0; return OK;
    case 83: *v = 1; return OK; // managed memory: must be masked
    case 124: *v = 1; return OK; // dma-buf
    default:
        if (attr > 0 && attr < 150) { *v = 0; return OK; }
        return INVALID_VALUE;
    }
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    (void)d;
    strncpy(name, "Fake GPU", (size_t)len);
    name[len - 1] = 0;
    return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) { (void)d; *bytes = (size_t)1 << 30; return OK; }
CUresult cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice d) {
    for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(i + 1 + d);
    return OK;
}

CUresult cuCtxCreate_v2(struct ctx **out, unsigned flags, CUdevice d) {
    (void)flags; (void)d;
    struct ctx *c = calloc(1, sizeof *c);
    if (!c) return OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    current = c;
    pthread_mutex_unlock(&lock);
    *out = c;
    return OK;
}

CUresult cuCtxSetCurrent(struct ctx *c) { current = c; return OK; }

CUresult cuCtxDestroy_v2(struct ctx *c) {
    pthread_mutex_lock(&lock);
    for (struct alloc **a = &allocs; *a;) {
        if ((*a)->ctx == c) {
            struct alloc *dead = *a;
            *a = dead->next;
            if (!dead->imported) free(dead->base);
            free(dead);
        } else {
            a = &(*a)->next;
        }
    }
    if (current == c) current = NULL;
    pthread_mutex_unlock(&lock);
    free(c);
    return OK;
}

CUresult cuCtxSynchronize(void) {
    ENTER
    for (struct stream *s = c->streams; s; s = s->next) run(s, s->queued);
    if (c->sticky) FAIL(c->sticky);
    LEAVE
}

/* Limits: the three the backend forwards, kept per process. */
static size_t limits[3] = {1024, 1 << 20, 8 << 20};

CUresult cuCtxSetLimit(int limit, size_t value) {
    ENTER
    if (limit < 0 || limit > 2) FAIL(215);
    limits[limit] = value;
    LEAVE
}

CUresult cuCtxGetLimit(size_t *value, int limit) {
    ENTER
    if (limit < 0 || limit > 2) FAIL(215);
    *value = limits[limit];
    LEAVE
}

static CUresult alloc(void **p, size_t n, int pinned) {
    ENTER
    if (n == 0) FAIL(INVALID_VALUE);
    // Device memory comes in 64 KiB pages, as on a GPU (dma-buf exports round
    // to host pages inside them).
    if (!pinned) n = (n + 65535) / 65536 * 65536;
    struct alloc *a = calloc(1, sizeof *a);
    void *base = NULL;
    if (!a || posix_memalign(&base, 65536, n)) { free(a); FAIL(OUT_OF_MEMORY); }
    memset(base, 0, n);
    a->base = base;
    a->ctx = c;
    a->size = n;
    a->pinned = pinned;
    a->next = allocs;
    allocs = a;
    *p = a->base;
    LEAVE
}

static CUresult release(void *p, int pinned) {
    ENTER
    for (struct alloc **a = &allocs; *a; a = &(*a)->next) {
        if ((*a)->ctx == c && (*a)->base == p && (*a)->pinned == pinned) {
            struct alloc *dead = *a;
            *a = dead->next;
            if (!dead->imported) free(dead->base);
            free(dead);
            goto out;
        }
    }
    FAIL(INVALID_VALUE);
    LEAVE
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    void *q = NULL;
    CUresult r = alloc(&q, n, 0);
    *p = (CUdeviceptr)(uintptr_t)q;
    return r;
}
CUresult cuMemFree_v2(CUdeviceptr p) { return release((void *)(uintptr_t)p, 0); }
CUresult cuMemAllocHost_v2(void **p, size_t n) { return alloc(p, n, 1); }
CUresult cuMemFreeHost(void *p) { return release(p, 1); }
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    *free_bytes = (size_t)1 << 29;
    *total = (size_t)1 << 30;
    return OK;
}

static unsigned char *dev(CUdeviceptr p) { return (unsigned char *)(uintptr_t)p; }

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, struct stream *s) {
    ENTER
    if (!find(c, dev(dst), n, 0) || !find(c, src, n, 1)) FAIL(INVALID_VALUE);
    enqueue(s, (struct op){0, dev(dst), src, n, 0});
    LEAVE
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, struct stream *s) {
    ENTER
    if (!find(c, dev(src), n, 0) || !find(c, dst, n, 1)) FAIL(INVALID_VALUE);
    enqueue(s, (struct op){0, dst, dev(src), n, 0});
    LEAVE
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, struct stream *s) {
    ENTER
    if (!find(c, dev(dst), n, 0) || !find(c, dev(src), n, 0)) FAIL(INVALID_VALUE);
    enqueue(s, (struct op){0, dev(dst), dev(src), n, 0});
    LEAVE
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, struct stream *s) {
    ENTER
    if (!find(c, dev(dst), n, 0)) FAIL(INVALID_VALUE);
    enqueue(s, (struct op){1, dev(dst), NULL, n, v});
    LEAVE
}

CUresult cuStreamCreate(struct stream **out, unsigned flags) {
    (void)flags;
    ENTER
    struct stream *s = calloc(1, sizeof *s);
    if (!s) FAIL(OUT_OF_MEMORY);
    s->ctx = c;
    s->next = c->streams;
    c->streams = s;
    *out = s;
    LEAVE
}
CUresult cuStreamDestroy_v2(struct stream *s) {
    pthread_mutex_lock(&lock);
    run(s, s->queued);
    for (struct stream **p = &s->ctx->streams; *p; p = &(*p)->next) {
        if (*p == s) { *p = s->next; break; }
    }
    pthread_mutex_unlock(&lock);
    free(s);
    return OK;
}
CUresult cuStreamSynchronize(struct stream *s) {
    ENTER
    run(s, s->queued);
    if (c->sticky) FAIL(c->sticky);
    LEAVE
}

CUresult cuEventCreate(struct event **out, unsigned flags) {
    (void)flags;
    *out = calloc(1, sizeof **out);
    return *out ? OK : OUT_OF_MEMORY;
}
CUresult cuEventDestroy_v2(struct event *e) { free(e); return OK; }
CUresult cuEventRecord(struct event *e, struct stream *s) {
    ENTER
    e->stream = s;
    e->position = s->queued;
    LEAVE
}
CUresult cuEventSynchronize(struct event *e) {
    ENTER
    if (e->stream) run(e->stream, e->position);
    if (c->sticky) FAIL(c->sticky);
    LEAVE
}

CUresult cuModuleLoadData(struct module **out, const void *image) {
    ENTER
    const unsigned char *b = image;
    if (!(b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba)) FAIL(INVALID_IMAGE);
    if ((uintptr_t)image % 64) FAIL(INVALID_IMAGE); // rcud aligns images to 64 bytes
    struct module *m = calloc(1, sizeof *m);
    if (!m) FAIL(OUT_OF_MEMORY);
    m->ctx = c;
    *out = m;
    LEAVE
}
CUresult cuModuleUnload(struct module *m) {
    ENTER
    (void)c;
    free(m);
    LEAVE
}
CUresult cuModuleGetFunction(struct function **out, struct module *m, const char *name) {
    ENTER
    int kind = !strcmp(name, "_Z4fillPhmh") ? 2 : !strcmp(name, "_Z5faultv") ? 3 : 0;
    if (!kind) FAIL(NOT_FOUND);
    struct function *f = calloc(1, sizeof *f);
    if (!f) FAIL(OUT_OF_MEMORY);
    f->module = m;
    f->kind = kind;
    f->max_dynamic = 49152;
    *out = f;
    LEAVE
}
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *size, struct module *m, const char *name) {
    if (strcmp(name, "counter")) return NOT_FOUND;
    if (!m->counter) {
        void *q = NULL;
        CUresult r = alloc(&q, 8, 0);
        if (r) return r;
        m->counter = q;
    }
    *p = (CUdeviceptr)(uintptr_t)m->counter;
    *size = 8;
    return OK;
}

CUresult cuFuncGetAttribute(int *v, int attr, struct function *f) {
    switch (attr) {
    case 0: *v = 1024; return OK;
    case 1: case 2: case 3: *v = 0; return OK;
    case 4: *v = 16; return OK;
    case 5: case 6: *v = 80; return OK;
    case 8: *v = f->max_dynamic; return OK;
    case 9: *v = -1; return OK;
    default: return INVALID_VALUE;
    }
}
CUresult cuFuncSetAttribute(struct function *f, int attr, int value) {
    if (attr == 8) {
        if (value < 0 || value > 227 * 1024) return INVALID_VALUE;
        f->max_dynamic = value;
        return OK;
    }
    return attr == 9 ? OK : INVALID_VALUE;
}
CUresult cuFuncGetParamInfo(struct function *f, size_t index, size_t *offset, size_t *size) {
    static const size_t offsets[] = {0, 8, 16}, sizes[] = {8, 8, 1};
    if (f->kind != 2 || index > 2) return INVALID_VALUE;
    *offset = offsets[index];
    *size = sizes[index];
    return OK;
}

CUresult cuLaunchKernel(struct function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, struct stream *s,
                        void **params, void **extra) {
    ENTER
    if (!gx || !gy || !gz || !bx || !by || !bz || (size_t)bx * by * bz > 1024) FAIL(INVALID_VALUE);
    if (shared > (unsigned)f->max_dynamic || params) FAIL(INVALID_VALUE);
    // The parameter buffer form: {1, buffer, 2, &size, 0}.
    if (!extra || extra[0] != (void *)1 || extra[2] != (void *)2 || extra[4] != NULL)
        FAIL(INVALID_VALUE);
    const unsigned char *buf = extra[1];
    size_t size = *(size_t *)extra[3];
    if (f->kind == 3) {
        enqueue(s, (struct op){3, NULL, NULL, 0, 0});
        goto out;
    }
    if (size < 17) FAIL(INVALID_VALUE);
    struct op o = {2, NULL, NULL, 0, 0};
    memcpy(&o.dst, buf, 8);
    memcpy(&o.n, buf + 8, 8);
    o.value = buf[16];
    enqueue(s, o);
    LEAVE
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t size, int type,
                                       unsigned long long flags) {
    ENTER
    if (type != 1 || flags || !find(c, dev(p), size, 0)) FAIL(INVALID_VALUE);
    *(int *)handle = open("/dev/null", O_RDONLY | O_CLOEXEC);
    LEAVE
}

// IPC: the handle names the allocation's address; another context may open
// it (the real driver: another process), the exporting one may not.
typedef struct {
    char reserved[64];
} fake_ipc_handle;
static const char ipc_magic[8] = "fakeIPC";

CUresult cuIpcGetMemHandle(fake_ipc_handle *handle, CUdeviceptr p) {
    ENTER
    struct alloc *a = find(c, dev(p), 0, 0);
    if (!a || a->base != dev(p)) FAIL(INVALID_VALUE);
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, ipc_magic, 8);
    memcpy(handle->reserved + 8, &p, 8);
    LEAVE
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *out, fake_ipc_handle handle, unsigned flags) {
    ENTER
    CUdeviceptr p;
    memcpy(&p, handle.reserved + 8, 8);
    if (memcmp(handle.reserved, ipc_magic, 8) || flags > 1) FAIL(INVALID_VALUE);
    struct alloc *owner = NULL;
    for (struct alloc *a = allocs; a; a = a->next)
        if (!a->pinned && a->base == dev(p)) owner = a;
    if (!owner) FAIL(INVALID_VALUE);
    if (owner->ctx == c) FAIL(INVALID_CONTEXT);
    struct alloc *m = calloc(1, sizeof *m);
    if (!m) FAIL(OUT_OF_MEMORY);
    *m = (struct alloc){c, owner->base, owner->size, 0, 1, allocs};
    allocs = m;
    *out = p;
    LEAVE
}

CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
    ENTER
    for (struct alloc **a = &allocs; *a; a = &(*a)->next) {
        if ((*a)->ctx == c && (*a)->imported && (*a)->base == dev(p)) {
            struct alloc *dead = *a;
            *a = dead->next;
            free(dead);
            goto out;
        }
    }
    FAIL(INVALID_VALUE);
    LEAVE
}

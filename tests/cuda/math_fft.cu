// cuFFT: every transform type in 1, 2 and 3 dimensions, batched, in place and
// out of place, basic and advanced layouts, checked against a naive DFT
// computed here on the host; round trips (forward then inverse = N x input);
// cuFFT's statuses for bad plans, sizes, types and pointers.
#include <cmath>
#include <complex>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <cufft.h>
#include <cufftXt.h>

#include "check.h"

typedef std::complex<double> cd;

#define CHECK_FFT(call)                                                             \
    do {                                                                            \
        cufftResult r_ = (call);                                                    \
        EXPECT(r_ == CUFFT_SUCCESS, "%s returned cufftResult %d", #call, (int)r_);  \
    } while (0)

#define EXPECT_FFT(call, expected)                                                  \
    do {                                                                            \
        cufftResult r_ = (call);                                                    \
        printf("%s -> %d\n", #call, (int)r_);                                       \
        EXPECT(r_ == (expected), "%s returned %d, expected %s", #call, (int)r_,     \
               #expected);                                                          \
    } while (0)

static unsigned long long rng = 88172645463325252ull;
static double uniform() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

// The unnormalized DFT of one dims[0] x dims[1] x dims[2] array (row-major),
// exponent sign `sign`.
static std::vector<cd> dft(const std::vector<cd>& x, const int dims[3], int sign) {
    int n0 = dims[0], n1 = dims[1], n2 = dims[2];
    std::vector<cd> y(x.size());
    for (int f0 = 0; f0 < n0; f0++)
        for (int f1 = 0; f1 < n1; f1++)
            for (int f2 = 0; f2 < n2; f2++) {
                cd sum = 0;
                for (int a = 0; a < n0; a++)
                    for (int b = 0; b < n1; b++)
                        for (int c = 0; c < n2; c++) {
                            double phase = (double)(a * f0 % n0) / n0 + (double)(b * f1 % n1) / n1 +
                                           (double)(c * f2 % n2) / n2;
                            sum += x[(a * n1 + b) * n2 + c] * std::polar(1.0, sign * 2 * M_PI * phase);
                        }
                y[(f0 * n1 + f1) * n2 + f2] = sum;
            }
    return y;
}

static void expect_close(const char* what, const std::vector<cd>& got, const std::vector<cd>& want,
                         double tolerance) {
    double scale = 1, worst = 0;
    for (size_t i = 0; i < want.size(); i++) scale = fmax(scale, std::abs(want[i]));
    for (size_t i = 0; i < want.size(); i++) worst = fmax(worst, std::abs(got[i] - want[i]));
    EXPECT(worst <= tolerance * scale, "%s: error %.3g of scale %.3g", what, worst, scale);
    printf("%s: ok (max error %.2e of %.2e)\n", what, worst, scale);
}

template <typename T> struct Types;
template <> struct Types<float> {
    typedef cufftComplex Complex;
    static constexpr cufftType c2c = CUFFT_C2C, r2c = CUFFT_R2C, c2r = CUFFT_C2R;
    static constexpr double tolerance = 2e-5;
    static cufftResult c2c_exec(cufftHandle p, void* i, void* o, int d) {
        return cufftExecC2C(p, (cufftComplex*)i, (cufftComplex*)o, d);
    }
    static cufftResult r2c_exec(cufftHandle p, void* i, void* o) {
        return cufftExecR2C(p, (cufftReal*)i, (cufftComplex*)o);
    }
    static cufftResult c2r_exec(cufftHandle p, void* i, void* o) {
        return cufftExecC2R(p, (cufftComplex*)i, (cufftReal*)o);
    }
};
template <> struct Types<double> {
    typedef cufftDoubleComplex Complex;
    static constexpr cufftType c2c = CUFFT_Z2Z, r2c = CUFFT_D2Z, c2r = CUFFT_Z2D;
    static constexpr double tolerance = 1e-11;
    static cufftResult c2c_exec(cufftHandle p, void* i, void* o, int d) {
        return cufftExecZ2Z(p, (cufftDoubleComplex*)i, (cufftDoubleComplex*)o, d);
    }
    static cufftResult r2c_exec(cufftHandle p, void* i, void* o) {
        return cufftExecD2Z(p, (cufftDoubleReal*)i, (cufftDoubleComplex*)o);
    }
    static cufftResult c2r_exec(cufftHandle p, void* i, void* o) {
        return cufftExecZ2D(p, (cufftDoubleComplex*)i, (cufftDoubleReal*)o);
    }
};

static cufftHandle plan_for(int rank, const int dims[3], cufftType type, int batch) {
    cufftHandle plan;
    if (rank == 1) CHECK_FFT(cufftPlan1d(&plan, dims[2], type, batch));
    if (rank == 2) CHECK_FFT(cufftPlan2d(&plan, dims[1], dims[2], type));
    if (rank == 3) CHECK_FFT(cufftPlan3d(&plan, dims[0], dims[1], dims[2], type));
    return plan;
}

// Complex transforms of dims (leading 1s for lower ranks), `batch` of them
// (1 unless rank 1): forward against the DFT, then inverse (in place when
// the forward was out of place, and the other way) = N x input.
template <typename T> static void complex_case(int rank, const int dims[3], int batch, bool in_place) {
    typedef Types<T> K;
    int elements = dims[0] * dims[1] * dims[2];
    size_t total = (size_t)elements * batch;
    std::vector<T> host(2 * total);
    for (auto& v : host) v = (T)uniform();
    T *a, *b;
    CHECK(cudaMalloc(&a, host.size() * sizeof(T)));
    CHECK(cudaMalloc(&b, host.size() * sizeof(T)));
    CHECK(cudaMemcpy(a, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    cufftHandle plan = plan_for(rank, dims, K::c2c, batch);
    T* out = in_place ? a : b;
    CHECK_FFT(K::c2c_exec(plan, a, out, CUFFT_FORWARD));
    std::vector<T> result(host.size());
    CHECK(cudaMemcpy(result.data(), out, result.size() * sizeof(T), cudaMemcpyDeviceToHost));
    char what[160];
    for (int k = 0; k < batch; k++) {
        std::vector<cd> x(elements), got(elements);
        for (int i = 0; i < elements; i++) {
            size_t at = 2 * ((size_t)k * elements + i);
            x[i] = cd(host[at], host[at + 1]);
            got[i] = cd(result[at], result[at + 1]);
        }
        snprintf(what, sizeof what, "%s %dd %dx%dx%d batch %d/%d %s forward", K::c2c == CUFFT_C2C ? "C2C" : "Z2Z",
                 rank, dims[0], dims[1], dims[2], k, batch, in_place ? "in place" : "out of place");
        expect_close(what, got, dft(x, dims, -1), K::tolerance);
    }
    T* back = in_place ? b : out;
    CHECK_FFT(K::c2c_exec(plan, out, back, CUFFT_INVERSE));
    CHECK(cudaMemcpy(result.data(), back, result.size() * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<cd> got(total), want(total);
    for (size_t i = 0; i < total; i++) {
        got[i] = cd(result[2 * i], result[2 * i + 1]);
        want[i] = cd(host[2 * i], host[2 * i + 1]) * (double)elements;
    }
    snprintf(what, sizeof what, "%s %dd round trip", K::c2c == CUFFT_C2C ? "C2C" : "Z2Z", rank);
    expect_close(what, got, want, K::tolerance);
    CHECK_FFT(cufftDestroy(plan));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
}

// Real transforms: R2C (D2Z) against the DFT's first half along the last
// dimension, then C2R (Z2D) back = N x input. In place uses the padded
// layout: each real row holds 2 * (n/2 + 1) values.
template <typename T> static void real_case(int rank, const int dims[3], int batch, bool in_place) {
    typedef Types<T> K;
    int last = dims[2], half = last / 2 + 1, rows = dims[0] * dims[1], elements = rows * last;
    int real_row = in_place ? 2 * half : last;
    size_t real_count = (size_t)rows * real_row * batch, complex_count = (size_t)rows * half * batch;
    std::vector<T> host(real_count, (T)0);
    for (size_t r = 0; r < (size_t)rows * batch; r++)
        for (int c = 0; c < last; c++) host[r * real_row + c] = (T)uniform();
    T *real, *spectrum;
    CHECK(cudaMalloc(&real, std::max(real_count, 2 * complex_count) * sizeof(T)));
    CHECK(cudaMemcpy(real, host.data(), real_count * sizeof(T), cudaMemcpyHostToDevice));
    if (in_place) {
        spectrum = real;
    } else {
        CHECK(cudaMalloc(&spectrum, 2 * complex_count * sizeof(T)));
    }
    cufftHandle forward = plan_for(rank, dims, K::r2c, batch);
    cufftHandle inverse = plan_for(rank, dims, K::c2r, batch);
    CHECK_FFT(K::r2c_exec(forward, real, spectrum));
    std::vector<T> result(2 * complex_count);
    CHECK(cudaMemcpy(result.data(), spectrum, result.size() * sizeof(T), cudaMemcpyDeviceToHost));
    const char* name = K::r2c == CUFFT_R2C ? "R2C" : "D2Z";
    char what[160];
    for (int k = 0; k < batch; k++) {
        std::vector<cd> x(elements);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < last; c++) x[r * last + c] = host[((size_t)k * rows + r) * real_row + c];
        std::vector<cd> full = dft(x, dims, -1), want, got;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < half; c++) {
                want.push_back(full[r * last + c]);
                size_t at = 2 * (((size_t)k * rows + r) * half + c);
                got.push_back(cd(result[at], result[at + 1]));
            }
        snprintf(what, sizeof what, "%s %dd %dx%dx%d batch %d/%d %s", name, rank, dims[0], dims[1], dims[2], k,
                 batch, in_place ? "in place" : "out of place");
        expect_close(what, got, want, K::tolerance);
    }
    CHECK_FFT(K::c2r_exec(inverse, spectrum, real));
    std::vector<T> back(real_count);
    CHECK(cudaMemcpy(back.data(), real, real_count * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<cd> got, want;
    for (size_t r = 0; r < (size_t)rows * batch; r++)
        for (int c = 0; c < last; c++) {
            got.push_back(back[r * real_row + c]);
            want.push_back((double)host[r * real_row + c] * elements);
        }
    snprintf(what, sizeof what, "%s %dd round trip", name, rank);
    expect_close(what, got, want, K::tolerance);
    CHECK_FFT(cufftDestroy(forward));
    CHECK_FFT(cufftDestroy(inverse));
    CHECK(cudaFree(real));
    if (!in_place) CHECK(cudaFree(spectrum));
}

// cufftPlanMany with an advanced layout: 3 transforms of 4x5 complex whose
// input rows are 7 elements apart, elements 2 apart, transforms 70 apart;
// output interleaved (stride 3, distance 1). Made through cufftCreate,
// cufftMakePlanMany64 and run on a stream of its own.
static void advanced_case() {
    const int rows = 4, cols = 5, batch = 3, dims[3] = {1, rows, cols};
    std::vector<float> host(2 * 70 * batch);
    for (auto& v : host) v = (float)uniform();
    float *in, *out;
    const int out_slots = rows * cols * batch + 8;
    CHECK(cudaMalloc(&in, host.size() * sizeof(float)));
    CHECK(cudaMalloc(&out, 2 * out_slots * sizeof(float)));
    CHECK(cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<float> sentinel(2 * out_slots, 777.0f);
    CHECK(cudaMemcpy(out, sentinel.data(), sentinel.size() * sizeof(float), cudaMemcpyHostToDevice));
    cufftHandle plan;
    CHECK_FFT(cufftCreate(&plan));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    CHECK_FFT(cufftSetStream(plan, stream));
    CHECK_FFT(cufftSetAutoAllocation(plan, 0));
    long long n[2] = {rows, cols}, inembed[2] = {rows, 7}, onembed[2] = {rows, cols};
    size_t work = 1234;
    CHECK_FFT(cufftMakePlanMany64(plan, 2, n, inembed, 2, 70, onembed, 3, 1, CUFFT_C2C, batch, &work));
    size_t size = 99;
    CHECK_FFT(cufftGetSize(plan, &size));
    EXPECT(size == work, "cufftGetSize %zu, cufftMakePlanMany64 %zu", size, work);
    void* area = nullptr;
    if (work) CHECK(cudaMalloc(&area, work));
    CHECK_FFT(cufftSetWorkArea(plan, area));
    CHECK_FFT(cufftExecC2C(plan, (cufftComplex*)in, (cufftComplex*)out, CUFFT_FORWARD));
    std::vector<float> result(2 * out_slots);
    CHECK(cudaMemcpyAsync(result.data(), out, result.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    for (int k = 0; k < batch; k++) {
        std::vector<cd> x(rows * cols), got(rows * cols);
        for (int i = 0; i < rows * cols; i++) {
            int at = k * 70 + 2 * (i / cols * 7 + i % cols);
            x[i] = cd(host[2 * at], host[2 * at + 1]);
            int slot = k + 3 * i;
            got[i] = cd(result[2 * slot], result[2 * slot + 1]);
        }
        expect_close("C2C 2d advanced layout (cufftMakePlanMany64, own stream)", got, dft(x, dims, -1), 2e-5);
    }
    for (int slot = rows * cols * batch; slot < out_slots; slot++)
        EXPECT(result[2 * slot] == 777.0f, "slot %d outside the layout was written", slot);
    CHECK_FFT(cufftDestroy(plan));
    CHECK(cudaStreamDestroy(stream));
    if (area) CHECK(cudaFree(area));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
}

// cufftPlanMany with NULL inembed: the basic layout, strides ignored.
static void basic_many_case() {
    const int dims[3] = {1, 6, 5}, batch = 2, elements = 30;
    std::vector<double> host(2 * elements * batch);
    for (auto& v : host) v = uniform();
    double* d;
    CHECK(cudaMalloc(&d, host.size() * sizeof(double)));
    CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice));
    int n[2] = {6, 5};
    cufftHandle plan;
    CHECK_FFT(cufftPlanMany(&plan, 2, n, NULL, 9, 999, NULL, 9, 999, CUFFT_Z2Z, batch));
    CHECK_FFT(cufftExecZ2Z(plan, (cufftDoubleComplex*)d, (cufftDoubleComplex*)d, CUFFT_INVERSE));
    std::vector<double> result(host.size());
    CHECK(cudaMemcpy(result.data(), d, result.size() * sizeof(double), cudaMemcpyDeviceToHost));
    for (int k = 0; k < batch; k++) {
        std::vector<cd> x(elements), got(elements);
        for (int i = 0; i < elements; i++) {
            x[i] = cd(host[2 * (k * elements + i)], host[2 * (k * elements + i) + 1]);
            got[i] = cd(result[2 * (k * elements + i)], result[2 * (k * elements + i) + 1]);
        }
        expect_close("Z2Z 2d cufftPlanMany basic layout, inverse in place", got, dft(x, dims, 1), 1e-11);
    }
    CHECK_FFT(cufftDestroy(plan));
    CHECK(cudaFree(d));
}

static void error_cases() {
    float* d;
    CHECK(cudaMalloc(&d, 64 * sizeof(cufftComplex)));
    cufftHandle plan;
    EXPECT_FFT(cufftExecC2C(12345, (cufftComplex*)d, (cufftComplex*)d, CUFFT_FORWARD), CUFFT_INVALID_PLAN);
    EXPECT_FFT(cufftPlan1d(&plan, 0, CUFFT_C2C, 1), CUFFT_INVALID_SIZE);
    EXPECT_FFT(cufftPlan1d(&plan, 16, CUFFT_C2C, 0), CUFFT_INVALID_SIZE);
    EXPECT_FFT(cufftPlan1d(&plan, 16, (cufftType)0x77, 1), CUFFT_INVALID_TYPE);
    int n4[4] = {2, 2, 2, 2};
    EXPECT_FFT(cufftPlanMany(&plan, 4, n4, NULL, 1, 0, NULL, 1, 0, CUFFT_C2C, 1), CUFFT_INVALID_VALUE);
    size_t work;
    EXPECT_FFT(cufftEstimate1d(64, CUFFT_C2C, 1, &work), CUFFT_SUCCESS);
    EXPECT_FFT(cufftEstimate3d(4, 0, 4, CUFFT_C2C, &work), CUFFT_INVALID_SIZE);

    // A created plan that was never made cannot execute.
    CHECK_FFT(cufftCreate(&plan));
    EXPECT_FFT(cufftExecC2C(plan, (cufftComplex*)d, (cufftComplex*)d, CUFFT_FORWARD), CUFFT_INVALID_PLAN);
    EXPECT_FFT(cufftMakePlan1d(plan, 64, CUFFT_R2C, 1, &work), CUFFT_SUCCESS);
    // The wrong execution function for the plan's type.
    EXPECT_FFT(cufftExecC2C(plan, (cufftComplex*)d, (cufftComplex*)d, CUFFT_FORWARD), CUFFT_INVALID_TYPE);
    EXPECT_FFT(cufftExecD2Z(plan, (cufftDoubleReal*)d, (cufftDoubleComplex*)d), CUFFT_INVALID_TYPE);
    EXPECT_FFT(cufftExecR2C(plan, NULL, (cufftComplex*)d), CUFFT_INVALID_VALUE);
    EXPECT_FFT(cufftExecR2C(plan, d, (cufftComplex*)d), CUFFT_SUCCESS);
    CHECK_FFT(cufftDestroy(plan));

    CHECK_FFT(cufftPlan1d(&plan, 64, CUFFT_C2C, 1));
    EXPECT_FFT(cufftExecC2C(plan, (cufftComplex*)d, (cufftComplex*)d, 0), CUFFT_INVALID_VALUE);
    // Callbacks run device code inside cuFFT's kernels: refused.
    void* callbacks[1] = {nullptr};
    EXPECT_FFT(cufftXtSetCallback(plan, callbacks, CUFFT_CB_LD_COMPLEX, NULL), CUFFT_NOT_SUPPORTED);
    CHECK_FFT(cufftDestroy(plan));

    int version = 0, major = -1;
    CHECK_FFT(cufftGetVersion(&version));
    CHECK_FFT(cufftGetProperty(MAJOR_VERSION, &major));
    // rcud answers one cuFFT 12 version whatever header a program saw.
    EXPECT(version / 1000 == CUFFT_VER_MAJOR && major == CUFFT_VER_MAJOR, "version %d, major %d", version,
           major);
    // Nothing above was launched with bad data: no sticky error.
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    CHECK(cudaFree(d));
}

// rcud's refusals of what NVIDIA's cuFFT accepts or leaves undefined: a
// negative size (cuFFT 12.0 on an H200 made that plan), data outside the
// application's device allocations (a host array, which HMM would let a
// local GPU read, and a range too short), a destroyed plan (use after
// free natively). Under rcud only: `math_fft hostile`.
static void hostile() {
    float* d;
    CHECK(cudaMalloc(&d, 64 * sizeof(cufftComplex)));
    cufftHandle plan;
    EXPECT_FFT(cufftPlan2d(&plan, 4, -3, CUFFT_C2C), CUFFT_INVALID_SIZE);
    size_t work;
    CHECK_FFT(cufftCreate(&plan));
    CHECK_FFT(cufftMakePlan1d(plan, 64, CUFFT_R2C, 1, &work));
    std::vector<float> host(256);
    EXPECT_FFT(cufftExecR2C(plan, host.data(), (cufftComplex*)d), CUFFT_INVALID_VALUE);
    EXPECT_FFT(cufftExecR2C(plan, d + 100, (cufftComplex*)d), CUFFT_INVALID_VALUE);
    CHECK_FFT(cufftDestroy(plan));
    EXPECT_FFT(cufftExecR2C(plan, d, (cufftComplex*)d), CUFFT_INVALID_PLAN);
    EXPECT_FFT(cufftSetStream(plan, 0), CUFFT_INVALID_PLAN);
    EXPECT_FFT(cufftDestroy(plan), CUFFT_INVALID_PLAN);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d));
    printf("hostile calls refused\n");
}

int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "hostile") == 0) {
        hostile();
        printf("PASS\n");
        return 0;
    }
    const int d1[3] = {1, 1, 1000}, d1s[3] = {1, 1, 15}, d2[3] = {1, 8, 6}, d3[3] = {8, 6, 4};
    for (int in_place = 0; in_place < 2; in_place++) {
        complex_case<float>(3, d3, 1, in_place);
        complex_case<double>(3, d3, 1, in_place);
        complex_case<float>(2, d2, 1, in_place);
        complex_case<double>(1, d1s, 3, in_place);
        real_case<float>(3, d3, 1, in_place);
        real_case<double>(3, d3, 1, in_place);
        real_case<float>(2, d2, 1, in_place);
        real_case<double>(1, d1s, 2, in_place);
    }
    complex_case<float>(1, d1, 4, false);
    real_case<float>(1, d1, 3, true);
    real_case<double>(1, d1, 2, false);
    advanced_case();
    basic_many_case();
    error_cases();
    CHECK(cudaDeviceSynchronize());
    printf("PASS\n");
    return 0;
}

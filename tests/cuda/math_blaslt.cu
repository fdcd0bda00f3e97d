// cuBLASLt through rcud: descriptors, layouts, preferences, the heuristic,
// and matmul with the default, bias, ReLU, ReLU+bias, GELU and GELU+bias
// epilogues, strided batches and FP16 inputs, each checked against a host
// reference; then the statuses of bad calls.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "check.h"

#define CHECK_LT(call)                                                                  \
    do {                                                                                \
        cublasStatus_t st_ = (call);                                                    \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                             \
            printf("FAIL: %s returned %s at line %d\n", #call, cublasLtGetStatusName(st_), \
                   __LINE__);                                                           \
            fflush(stdout);                                                             \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define EXPECT_STATUS(call, expected)                                                   \
    do {                                                                                \
        cublasStatus_t st_ = (call);                                                    \
        printf("%s -> %s\n", #call, cublasLtGetStatusName(st_));                        \
        EXPECT(st_ == (expected), "%s returned %d, expected %s", #call, (int)st_, #expected); \
    } while (0)

static unsigned seed_state = 777;
static float next_value() {
    seed_state = seed_state * 1103515245u + 12345u;
    return ((seed_state >> 8) % 2001) / 1000.0f - 1.0f;
}

static double gelu(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

// One FP32 matmul D = epi(alpha op(A) op(B) + beta C), batched and strided,
// D with its own leading dimension, checked against the host.
static void check_matmul(cublasLtHandle_t lt, cudaStream_t stream, cublasOperation_t ta, cublasOperation_t tb,
                         cublasLtEpilogue_t epi, const char* name) {
    const int m = 24, n = 18, k = 20, batch = 3, ldd = m + 5;
    int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    long long sa = (long long)ar * ac, sb = (long long)br * bc, sc = (long long)m * n, sd = (long long)ldd * n;
    std::vector<float> a(sa * batch), b(sb * batch), c(sc * batch), bias(m * batch), d(sd * batch, 0.f);
    for (auto* v : {&a, &b, &c, &bias})
        for (auto& x : *v) x = next_value();
    float *da, *db, *dc, *dd, *dbias;
    CHECK(cudaMalloc(&da, a.size() * 4));
    CHECK(cudaMalloc(&db, b.size() * 4));
    CHECK(cudaMalloc(&dc, c.size() * 4));
    CHECK(cudaMalloc(&dd, d.size() * 4));
    CHECK(cudaMalloc(&dbias, bias.size() * 4));
    CHECK(cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dbias, bias.data(), bias.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dd, 0, d.size() * 4));

    cublasLtMatmulDesc_t desc;
    CHECK_LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
    long long bias_stride = m;
    CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride,
                                            sizeof bias_stride));
    cublasLtEpilogue_t got_epi;
    size_t written = 0;
    CHECK_LT(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &got_epi, sizeof got_epi, &written));
    EXPECT(got_epi == epi && written == sizeof epi, "epilogue attribute reads back");

    cublasLtMatrixLayout_t la, lb, lc, ld;
    CHECK_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, ar, ac, ar));
    CHECK_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, br, bc, br));
    CHECK_LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
    CHECK_LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, ldd));
    int count = batch;
    long long strides[4] = {sa, sb, sc, sd};
    cublasLtMatrixLayout_t layouts[4] = {la, lb, lc, ld};
    for (int i = 0; i < 4; i++) {
        CHECK_LT(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
        CHECK_LT(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                                                  sizeof strides[i]));
    }
    cublasLtMatmulPreference_t pref;
    CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = 1 << 20;
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t result;
    int returned = 0;
    CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, ld, pref, 1, &result, &returned));
    EXPECT(returned == 1 && result.state == CUBLAS_STATUS_SUCCESS, "one algorithm");

    float alpha = 1.5f, beta = -0.5f;
    CHECK_LT(cublasLtMatmul(lt, desc, &alpha, da, la, db, lb, &beta, dc, lc, dd, ld, &result.algo, nullptr, 0, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost));
    bool with_bias = epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_RELU_BIAS || epi == CUBLASLT_EPILOGUE_GELU_BIAS;
    bool relu = epi == CUBLASLT_EPILOGUE_RELU || epi == CUBLASLT_EPILOGUE_RELU_BIAS;
    bool gel = epi == CUBLASLT_EPILOGUE_GELU || epi == CUBLASLT_EPILOGUE_GELU_BIAS;
    for (int p = 0; p < batch; p++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < ldd; i++) {
                float got = d[p * sd + i + (long long)j * ldd];
                if (i >= m) {
                    EXPECT(got == 0.0f, "%s: padding of D written", name);
                    continue;
                }
                double s = 0;
                for (int l = 0; l < k; l++) {
                    double av = ta == CUBLAS_OP_N ? a[p * sa + i + (long long)l * ar] : a[p * sa + l + (long long)i * ar];
                    double bv = tb == CUBLAS_OP_N ? b[p * sb + l + (long long)j * br] : b[p * sb + j + (long long)l * br];
                    s += av * bv;
                }
                double want = alpha * s + beta * c[p * sc + i + (long long)j * m];
                if (with_bias) want += bias[p * m + i];
                if (relu) want = fmax(want, 0.0);
                if (gel) want = gelu(want);
                EXPECT(fabs(got - want) <= 1e-4 * (1 + fabs(want)), "%s: D(%d,%d) batch %d is %g, want %g", name, i, j,
                       p, got, want);
            }
    for (auto l : layouts) CHECK_LT(cublasLtMatrixLayoutDestroy(l));
    CHECK_LT(cublasLtMatmulPreferenceDestroy(pref));
    CHECK_LT(cublasLtMatmulDescDestroy(desc));
    for (void* p : {(void*)da, (void*)db, (void*)dc, (void*)dd, (void*)dbias}) CHECK(cudaFree(p));
    printf("%s ok\n", name);
}

// FP16 A and B, FP32 C/D and compute, device pointer mode for the scalars.
static void check_half(cublasLtHandle_t lt) {
    const int m = 16, n = 8, k = 32;
    std::vector<__half> a(m * k), b(k * n);
    std::vector<float> af(m * k), bf(k * n), d(m * n);
    for (int i = 0; i < m * k; i++) {
        a[i] = __float2half(next_value());
        af[i] = __half2float(a[i]);
    }
    for (int i = 0; i < k * n; i++) {
        b[i] = __float2half(next_value());
        bf[i] = __half2float(b[i]);
    }
    __half *da, *db;
    float *dd, *dscal;
    CHECK(cudaMalloc(&da, a.size() * 2));
    CHECK(cudaMalloc(&db, b.size() * 2));
    CHECK(cudaMalloc(&dd, d.size() * 4));
    CHECK(cudaMalloc(&dscal, 8));
    float scal[2] = {1.0f, 0.0f};
    CHECK(cudaMemcpy(dscal, scal, 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
    cublasLtMatmulDesc_t desc;
    CHECK_LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_DEVICE;
    CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof mode));
    cublasLtMatrixLayout_t la, lb, ld;
    CHECK_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, m, k, m));
    CHECK_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, k, n, k));
    CHECK_LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, m));
    CHECK_LT(cublasLtMatmul(lt, desc, dscal, da, la, db, lb, dscal + 1, dd, ld, dd, ld, nullptr, nullptr, 0, 0));
    CHECK(cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost));
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int l = 0; l < k; l++) s += (double)af[i + l * m] * bf[l + j * k];
            EXPECT(fabs(d[i + j * m] - s) < 1e-4 * (1 + fabs(s)), "half matmul (%d,%d)", i, j);
        }

    // Bad calls: mismatched shapes, row-major order, null and destroyed handles.
    cublasLtMatrixLayout_t bad;
    CHECK_LT(cublasLtMatrixLayoutCreate(&bad, CUDA_R_16F, k + 1, n, k + 1));
    EXPECT_STATUS(cublasLtMatmul(lt, desc, dscal, da, la, db, bad, dscal + 1, dd, ld, dd, ld, nullptr, nullptr, 0, 0),
                  CUBLAS_STATUS_INVALID_VALUE);
    cublasLtOrder_t row = CUBLASLT_ORDER_ROW;
    CHECK_LT(cublasLtMatrixLayoutSetAttribute(bad, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
    EXPECT_STATUS(cublasLtMatmul(lt, desc, dscal, da, la, db, bad, dscal + 1, dd, ld, dd, ld, nullptr, nullptr, 0, 0),
                  CUBLAS_STATUS_NOT_SUPPORTED);
    // A D layout larger than D's allocation.
    cublasLtMatrixLayout_t big;
    CHECK_LT(cublasLtMatrixLayoutCreate(&big, CUDA_R_32F, m, n, 4 * m));
    EXPECT_STATUS(cublasLtMatmul(lt, desc, dscal, da, la, db, lb, dscal + 1, dd, big, dd, big, nullptr, nullptr, 0, 0),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasLtMatmul(nullptr, desc, dscal, da, la, db, lb, dscal + 1, dd, ld, dd, ld, nullptr, nullptr, 0, 0),
                  CUBLAS_STATUS_NOT_INITIALIZED);
    for (auto l : {la, lb, ld, bad, big}) CHECK_LT(cublasLtMatrixLayoutDestroy(l));
    CHECK_LT(cublasLtMatmulDescDestroy(desc));
    for (void* p : {(void*)da, (void*)db, (void*)dd, (void*)dscal}) CHECK(cudaFree(p));
    printf("half matmul and errors ok\n");
}

int main() {
    cublasLtHandle_t lt;
    CHECK_LT(cublasLtCreate(&lt));
    printf("cublasLt version: %zu\n", cublasLtGetVersion());
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    check_matmul(lt, stream, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT, "default NN");
    check_matmul(lt, stream, CUBLAS_OP_T, CUBLAS_OP_N, CUBLASLT_EPILOGUE_BIAS, "bias TN");
    check_matmul(lt, stream, CUBLAS_OP_N, CUBLAS_OP_T, CUBLASLT_EPILOGUE_RELU, "relu NT");
    check_matmul(lt, stream, CUBLAS_OP_T, CUBLAS_OP_T, CUBLASLT_EPILOGUE_RELU_BIAS, "relu+bias TT");
    check_matmul(lt, stream, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_GELU, "gelu NN");
    check_matmul(lt, stream, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_GELU_BIAS, "gelu+bias NN");
    check_half(lt);
    CHECK_LT(cublasLtDestroy(lt));
    EXPECT_STATUS(cublasLtDestroy(lt), CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK(cudaStreamDestroy(stream));
    printf("PASS\n");
    return 0;
}

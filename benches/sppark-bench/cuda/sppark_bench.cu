// The device side of sppark-bench: sppark's BLS12-381 templates instantiated for the G1 (Fp) and
// G2 (Fp2) Pippenger MSM and the Fr NTT, behind a C ABI that src/sppark.rs wraps (and is the only
// caller of). Nothing here is sppark's own code: it only names sppark's types and calls its API
// (msm_t::invoke with device pointers, NTT::Base_dev_ptr).
//
// Layouts, the same bytes as blst's types (static_asserts below; main.rs compares the sizes
// reported by sppark_bench_layout with blst's at start):
//   Fr        4 little-endian u64 limbs, Montgomery form (R = 2^256)          = blst_fr
//   Fp        6 little-endian u64 limbs, Montgomery form (R = 2^384)          = blst_fp
//   Fp2       (c0, c1)                                                        = blst_fp2
//   G1 affine (x, y) over Fp; G2 affine (x, y) over Fp2                       = blst_p1_affine, blst_p2_affine
//   results   Jacobian (X, Y, Z), x = X/Z^2, y = Y/Z^3, Z = 0 at infinity   = blst_p1, blst_p2
//
// Errors: every entry point returns sppark's RustError by value (code 0 on success; otherwise the
// negated CUDA error and, with TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE, sppark's "call@file:line
// failed" text, which the Rust side frees).

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstring>

#include <ff/bls12-381.hpp>
#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> g1_point_t;
typedef xyzz_t<fp_t> g1_bucket_t;
typedef g1_bucket_t::affine_t g1_affine_t;
typedef jacobian_t<fp2_t> g2_point_t;
typedef xyzz_t<fp2_t> g2_bucket_t;
typedef g2_bucket_t::affine_t g2_affine_t;
typedef fr_t scalar_t;

// pippenger.cuh would otherwise instantiate its kernels for one global bucket_t/affine_t pair;
// here two curves share the translation unit and msm_t instantiates what each one launches.
#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#include <msm/pippenger.cuh>
#include <ntt/ntt.cuh>

// The bytes in memory: affine points as the kernels read them (mem_t; in the device pass an
// fp2_t register holds one half of an Fp2, the pair of threads that share it hold both), results
// as the host returns them.
static_assert(sizeof(scalar_t) == 32, "Fr is 4 u64 limbs (blst_fr)");
static_assert(sizeof(g1_affine_t::mem_t) == 96, "G1 affine is 2 Fp (blst_p1_affine)");
static_assert(sizeof(g2_affine_t::mem_t) == 192, "G2 affine is 2 Fp2 (blst_p2_affine)");
#ifndef __CUDA_ARCH__
static_assert(sizeof(g1_affine_t) == 96 && sizeof(g2_affine_t) == 192, "host affine points");
static_assert(sizeof(g1_point_t) == 144, "G1 Jacobian is 3 Fp (blst_p1)");
static_assert(sizeof(g2_point_t) == 288, "G2 Jacobian is 3 Fp2 (blst_p2)");
#endif

static RustError error_of(const sppark_error& e)
{   return RustError{e.code(), e.what()};   }

static RustError error_of(const char* what)
{   return RustError{-1, what};   }

// Sizes of the types that cross the ABI, in the order main.rs reads them.
extern "C" void sppark_bench_layout(size_t sizes[5])
{
    sizes[0] = sizeof(scalar_t);
    sizes[1] = sizeof(g1_affine_t);
    sizes[2] = sizeof(g2_affine_t);
    sizes[3] = sizeof(g1_point_t);
    sizes[4] = sizeof(g2_point_t);
}

// Selects the first device sppark accepts (compute capability 7+, cooperative launch) and
// writes its name and SM count. The default memory pool keeps what it has allocated
// (release threshold: unlimited): msm_t::invoke takes its per-call scratch with
// cudaMallocAsync, and with the default threshold of 0 every call would return it to the
// driver at its final synchronize and map it again in the next call.
extern "C" RustError sppark_bench_open(char* name, size_t name_len, int* sm_count)
{
    try {
        const gpu_t& gpu = select_gpu(0);
        std::snprintf(name, name_len, "%s", gpu.props().name);
        *sm_count = gpu.sm_count();
        cudaMemPool_t pool;
        CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, gpu.cid()));
        uint64_t keep_all = UINT64_MAX;
        CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
        return RustError{cudaSuccess};
    } catch (const sppark_error& e) {
        return error_of(e);
    }
}

extern "C" RustError sppark_bench_alloc(void** ptr, size_t bytes)
{
    try {
        CUDA_OK(cudaMalloc(ptr, bytes));
        return RustError{cudaSuccess};
    } catch (const sppark_error& e) {
        return error_of(e);
    }
}

extern "C" void sppark_bench_free(void* ptr)
{   (void)cudaFree(ptr);   }

extern "C" RustError sppark_bench_upload(void* dst, const void* src, size_t bytes)
{
    try {
        CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
        return RustError{cudaSuccess};
    } catch (const sppark_error& e) {
        return error_of(e);
    }
}

extern "C" RustError sppark_bench_download(void* dst, const void* src, size_t bytes)
{
    try {
        CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
        return RustError{cudaSuccess};
    } catch (const sppark_error& e) {
        return error_of(e);
    }
}

// One curve's MSM engine, made once per size: msm_t sized for `capacity` points (its window
// width follows from that) with its bucket and histogram memory, but without points of its
// own: every call passes the bases and the scalars as device pointers.
class msm_context {
public:
    virtual ~msm_context() {}
    virtual RustError run(void* out, const void* d_points, const void* d_scalars,
                          size_t n, double* host_ms) = 0;
};

template<class bucket_t, class point_t, class affine_t>
class resident_msm : public msm_context {
    msm_t<bucket_t, point_t, affine_t, scalar_t> engine;
    size_t capacity;

public:
    explicit resident_msm(size_t n) : engine(nullptr, n), capacity(n) {}

    // The timed region: a device synchronize (so nothing earlier is counted), then one
    // msm_t::invoke, which returns after its own synchronize and its host-side sum of the
    // window results. Scalars are in Montgomery form (invoke's mont = true, as blst_fr).
    RustError run(void* out, const void* d_points, const void* d_scalars,
                  size_t n, double* host_ms) override
    {
        if (n > capacity)
            return error_of("msm: more points than the engine was made for");
        try {
            CUDA_OK(cudaDeviceSynchronize());
            auto start = std::chrono::steady_clock::now();
            // dev_ptr_t made from a pointer does not own it: nothing is freed here.
            RustError err = engine.invoke(
                *static_cast<point_t*>(out),
                dev_ptr_t<affine_t>{static_cast<affine_t*>(const_cast<void*>(d_points)), n},
                n,
                dev_ptr_t<scalar_t>{static_cast<scalar_t*>(const_cast<void*>(d_scalars)), n},
                true);
            auto stop = std::chrono::steady_clock::now();
            *host_ms = std::chrono::duration<double, std::milli>(stop - start).count();
            return err;
        } catch (const sppark_error& e) {
            return error_of(e);
        }
    }
};

// curve: 1 = G1, 2 = G2.
extern "C" RustError sppark_bench_msm_new(int curve, size_t n, msm_context** ctx)
{
    try {
        if (curve == 1)
            *ctx = new resident_msm<g1_bucket_t, g1_point_t, g1_affine_t>(n);
        else if (curve == 2)
            *ctx = new resident_msm<g2_bucket_t, g2_point_t, g2_affine_t>(n);
        else
            return error_of("msm: curve is neither 1 (G1) nor 2 (G2)");
        return RustError{cudaSuccess};
    } catch (const sppark_error& e) {
        return error_of(e);
    }
}

extern "C" RustError sppark_bench_msm_run(msm_context* ctx, void* out, const void* d_points,
                                          const void* d_scalars, size_t n, double* host_ms)
{   return ctx->run(out, d_points, d_scalars, n, host_ms);   }

extern "C" void sppark_bench_msm_free(msm_context* ctx)
{   delete ctx;   }

// Forward NTT of 2^lg_n Fr (Montgomery form) in place in device memory, natural order in and
// out (sppark's NN order: a bit reversal, then its Cooley-Tukey passes), evaluations at the
// powers of omega = forward_roots_of_unity[lg_n]. Timed with CUDA events around the call on
// the one stream sppark runs it on; twiddle tables are built on the first call.
extern "C" RustError sppark_bench_ntt_forward(void* d_inout, uint32_t lg_n, float* device_ms)
{
    cudaEvent_t start = nullptr, stop = nullptr;
    try {
        const gpu_t& gpu = select_gpu(-1);
        stream_t& stream = gpu;
        CUDA_OK(cudaEventCreate(&start));
        CUDA_OK(cudaEventCreate(&stop));
        CUDA_OK(cudaEventRecord(start, stream));
        NTT::Base_dev_ptr(stream, static_cast<fr_t*>(d_inout), lg_n,
                          NTT::InputOutputOrder::NN, NTT::Direction::forward,
                          NTT::Type::standard);
        CUDA_OK(cudaEventRecord(stop, stream));
        CUDA_OK(cudaEventSynchronize(stop));
        CUDA_OK(cudaEventElapsedTime(device_ms, start, stop));
        (void)cudaEventDestroy(start);
        (void)cudaEventDestroy(stop);
        return RustError{cudaSuccess};
    } catch (const sppark_error& e) {
        if (start) (void)cudaEventDestroy(start);
        if (stop) (void)cudaEventDestroy(stop);
        return error_of(e);
    }
}

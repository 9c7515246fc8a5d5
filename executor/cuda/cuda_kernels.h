// The cuda backend's own kernels (GEMMs go to cuBLASLt, collectives to NCCL). Each launches on
// `stream` and returns the launch's cudaError_t as an int so that this header needs no CUDA
// include.
#pragma once

#include <cstddef>
#include <cstdint>

struct CUstream_st;

namespace cs::exec::cuda {

using Stream = CUstream_st*;

// y = a * x + b over n floats (elementwise, memcpy, embedding gathers: memory-bound streams).
int launch_streaming(float* y, const float* x, size_t n, Stream stream);
// Row-wise softmax over rows x cols floats in place (attention scores, cross-entropy's softmax,
// and, with mean/variance in the same pass, layer norm). Causal: the first row is row
// `first_row` of its square score matrix (a pass over part of a long sequence's rows).
int launch_row_softmax(float* data, int64_t rows, int64_t cols, bool causal, int64_t first_row,
                       Stream stream);
int launch_layer_norm(float* y, const float* x, int64_t rows, int64_t cols, Stream stream);
// Fused AdamW over n parameters (fp32 master weights, moments m and v).
int launch_adamw(float* param, const float* grad, float* m, float* v, size_t n, int step,
                 Stream stream);
// Fills n floats with a deterministic pattern (inputs and initial parameters).
int launch_fill(float* data, size_t n, float scale, Stream stream);
// Fills `bytes` with uniform pseudo-random values in [-1, 1) of an element type (0 fp32/tf32,
// 1 bf16, 2 fp16, 3 fp8 e4m3): GEMM inputs. Tensor cores draw less power, and so hold higher
// clocks, on constant or non-finite data; real training data is neither.
int launch_fill_random(void* data, size_t bytes, int element_type, Stream stream);
// One thread that sleeps on the GPU for `ns` nanoseconds (a graph's delay task): the stream waits
// while the SMs idle and the GPU's power falls.
int launch_sleep(int64_t ns, Stream stream);
// A kernel that fails on purpose (error-path tests): an out-of-bounds trap.
int launch_failing_kernel(Stream stream);

}  // namespace cs::exec::cuda

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "executor/cuda/cuda_kernels.h"

namespace cs::exec::cuda {
namespace {

constexpr int kThreads = 256;  // threads per block: a common choice for memory-bound kernels

unsigned blocks_for(size_t n) {
  const size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 16 ? (b == 0 ? 1 : b) : 65535 * 16);
}

__global__ void streaming(float* y, const float* x, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    y[i] = x[i] * 1.0001f + 0.5f;
  }
}

// One block per row: max, sum of exponentials, normalise (shared-memory reductions).
// Row r of the block is row first_row + r of its (square, when causal) score matrix.
__global__ void row_softmax(float* data, int64_t cols, bool causal, int64_t first_row) {
  __shared__ float scratch[kThreads];
  float* row = data + blockIdx.x * cols;
  const int64_t valid =
      causal ? min(cols, (first_row + static_cast<int64_t>(blockIdx.x)) % cols + 1) : cols;
  float mx = -3.4e38f;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) mx = fmaxf(mx, row[j]);
  scratch[threadIdx.x] = mx;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  mx = scratch[0];
  __syncthreads();
  float sum = 0;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) sum += row[j] = __expf(row[j] - mx);
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  sum = scratch[0];
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) row[j] = j < valid ? row[j] / sum : 0.0f;
}

__global__ void layer_norm(float* y, const float* x, int64_t cols) {
  __shared__ float s1[kThreads], s2[kThreads];
  const float* in = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float a = 0, b = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    a += in[j];
    b += in[j] * in[j];
  }
  s1[threadIdx.x] = a;
  s2[threadIdx.x] = b;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      s1[threadIdx.x] += s1[threadIdx.x + s];
      s2[threadIdx.x] += s2[threadIdx.x + s];
    }
    __syncthreads();
  }
  const float mean = s1[0] / static_cast<float>(cols);
  const float var = s2[0] / static_cast<float>(cols) - mean * mean;
  const float inv = rsqrtf(var + 1e-5f);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) out[j] = (in[j] - mean) * inv;
}

__global__ void adamw(float* p, const float* g, float* m, float* v, size_t n, float c1, float c2) {
  // PyTorch AdamW's defaults (betas 0.9 / 0.999, eps 1e-8, weight decay 0.01) with lr 1e-3.
  const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    p[i] -= lr * ((m[i] / c1) / (sqrtf(v[i] / c2) + eps) + wd * p[i]);
  }
}

__global__ void fill(float* d, size_t n, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    d[i] = scale * __sinf(static_cast<float>(i % 4096));
  }
}

// A value in [-1, 1) from an integer hash of the index (splitmix64's finaliser).
__device__ float uniform(size_t i) {
  unsigned long long z = i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T>
__global__ void fill_random(T* d, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    d[i] = static_cast<T>(uniform(i));
  }
}

__global__ void sleeping(long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(10000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (static_cast<long long>(now - start) < ns);
}

__global__ void failing() { __trap(); }

}  // namespace

int launch_streaming(float* y, const float* x, size_t n, Stream stream) {
  streaming<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n);
  return static_cast<int>(cudaGetLastError());
}

int launch_row_softmax(float* data, int64_t rows, int64_t cols, bool causal, int64_t first_row,
                       Stream stream) {
  if (rows <= 0 || cols <= 0) return 0;
  row_softmax<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(data, cols, causal, first_row);
  return static_cast<int>(cudaGetLastError());
}

int launch_layer_norm(float* y, const float* x, int64_t rows, int64_t cols, Stream stream) {
  if (rows <= 0 || cols <= 0) return 0;
  layer_norm<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(y, x, cols);
  return static_cast<int>(cudaGetLastError());
}

int launch_adamw(float* param, const float* grad, float* m, float* v, size_t n, int step,
                 Stream stream) {
  const float c1 = 1.0f - powf(0.9f, static_cast<float>(step)),
              c2 = 1.0f - powf(0.999f, static_cast<float>(step));
  adamw<<<blocks_for(n), kThreads, 0, stream>>>(param, grad, m, v, n, c1, c2);
  return static_cast<int>(cudaGetLastError());
}

int launch_fill(float* data, size_t n, float scale, Stream stream) {
  fill<<<blocks_for(n), kThreads, 0, stream>>>(data, n, scale);
  return static_cast<int>(cudaGetLastError());
}

int launch_fill_random(void* data, size_t bytes, int element_type, Stream stream) {
  switch (element_type) {
    case 1:
      fill_random<<<blocks_for(bytes / 2), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data),
                                                                  bytes / 2);
      break;
    case 2:
      fill_random<<<blocks_for(bytes / 2), kThreads, 0, stream>>>(static_cast<__half*>(data),
                                                                  bytes / 2);
      break;
    case 3:
      fill_random<<<blocks_for(bytes), kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data),
                                                              bytes);
      break;
    default:
      fill_random<<<blocks_for(bytes / 4), kThreads, 0, stream>>>(static_cast<float*>(data),
                                                                  bytes / 4);
      break;
  }
  return static_cast<int>(cudaGetLastError());
}

int launch_sleep(int64_t ns, Stream stream) {
  if (ns <= 0) return 0;
  sleeping<<<1, 1, 0, stream>>>(static_cast<long long>(ns));
  return static_cast<int>(cudaGetLastError());
}

int launch_failing_kernel(Stream stream) {
  failing<<<1, 1, 0, stream>>>();
  return static_cast<int>(cudaGetLastError());
}

}  // namespace cs::exec::cuda

// typeflow/backend/cuda/cuda.hpp — the CUDA backend (devices `tf::gpu<N>`):
// fused element-wise regions as generated kernels, matmul through cuBLAS
// (dense layers through cuBLASLt), reductions, softmax, one_hot, the array
// ops, gather and the sparse updates of embeddings (sorted with CUB), the
// LU-based linear algebra (cuBLAS), dropout,
// conv2d through cuDNN, pooling, the fused LSTM recurrence,
// transfers to and from the host. Included by
// <typeflow/typeflow.hpp> when nvcc compiles it (TYPEFLOW_NO_CUDA turns that
// off).
#pragma once
#include <typeflow/backend/cuda/fused.hpp>
#include <typeflow/backend/cuda/ops/apply.hpp>
#include <typeflow/backend/cuda/ops/array.hpp>
#include <typeflow/backend/cuda/ops/conv.hpp>
#include <typeflow/backend/cuda/ops/gather.hpp>
#include <typeflow/backend/cuda/ops/linalg.hpp>
#include <typeflow/backend/cuda/ops/matmul.hpp>
#include <typeflow/backend/cuda/ops/nn.hpp>
#include <typeflow/backend/cuda/ops/pool.hpp>
#include <typeflow/backend/cuda/ops/random.hpp>
#include <typeflow/backend/cuda/ops/reduce.hpp>
#include <typeflow/backend/cuda/ops/rnn.hpp>
#include <typeflow/backend/cuda/ops/transpose.hpp>
#include <typeflow/backend/cuda/runtime.hpp>

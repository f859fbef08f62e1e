// typeflow/typeflow.hpp — everything that needs neither CUDA nor Asio.
//
//   #include <typeflow/typeflow.hpp>
//   namespace tf = typeflow;
//   tf::placeholder<"x", float, tf::shape<tf::dyn, 4>> x;
//   tf::variable<"W", float, tf::shape<4, 3>> W{tf::init::glorot_uniform{}};
//   tf::session s;
//   auto y = s.run(tf::relu(tf::matmul(x, W)), tf::feed(x, batch));
#pragma once

#include <typeflow/core/device.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/fixed_string.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/tensor.hpp>

#include <typeflow/autodiff/grad.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/init.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/let.hpp>
#include <typeflow/expr/node.hpp>
#include <typeflow/expr/ops/apply.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/array.hpp>
#include <typeflow/expr/ops/assign.hpp>
#include <typeflow/expr/ops/cast.hpp>
#include <typeflow/expr/ops/compare.hpp>
#include <typeflow/autodiff/cond.hpp>
#include <typeflow/expr/ops/control.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/expr/ops/conv.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/ops/group.hpp>
#include <typeflow/expr/ops/linalg.hpp>
#include <typeflow/expr/ops/logical.hpp>
#include <typeflow/autodiff/loop.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/expr/ops/matmul.hpp>
#include <typeflow/expr/ops/nn.hpp>
#include <typeflow/expr/ops/normalization.hpp>
#include <typeflow/expr/ops/outputs.hpp>
#include <typeflow/expr/ops/pool.hpp>
#include <typeflow/expr/ops/random.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/expr/ops/reshape.hpp>
#include <typeflow/expr/ops/rnn.hpp>
#include <typeflow/expr/ops/to_device.hpp>
#include <typeflow/expr/ops/transpose.hpp>
#include <typeflow/expr/ops/where.hpp>

#include <typeflow/graph/dot.hpp>
#include <typeflow/graph/topo.hpp>

#include <typeflow/kernel/kernel.hpp>
#include <typeflow/kernel/region.hpp>
#include <typeflow/kernel/transfer.hpp>

#include <typeflow/backend/eigen/elementwise.hpp>
#include <typeflow/backend/eigen/fused.hpp>
#include <typeflow/backend/eigen/interop.hpp>
#include <typeflow/backend/eigen/ops/apply.hpp>
#include <typeflow/backend/eigen/ops/array.hpp>
#include <typeflow/backend/eigen/ops/cond.hpp>
#include <typeflow/backend/eigen/ops/conv.hpp>
#include <typeflow/backend/eigen/ops/gather.hpp>
#include <typeflow/backend/eigen/ops/gradient_ops.hpp>
#include <typeflow/backend/eigen/ops/group.hpp>
#include <typeflow/backend/eigen/ops/linalg.hpp>
#include <typeflow/backend/eigen/ops/loop.hpp>
#include <typeflow/backend/eigen/ops/matmul.hpp>
#include <typeflow/backend/eigen/ops/nn.hpp>
#include <typeflow/backend/eigen/ops/normalization.hpp>
#include <typeflow/backend/eigen/ops/pool.hpp>
#include <typeflow/backend/eigen/ops/random.hpp>
#include <typeflow/backend/eigen/ops/reduce.hpp>
#include <typeflow/backend/eigen/ops/rnn.hpp>
#include <typeflow/backend/eigen/ops/transpose.hpp>
#include <typeflow/backend/reference/reference.hpp>
#if defined(__CUDACC__) && !defined(TYPEFLOW_NO_CUDA)
#include <typeflow/backend/cuda/cuda.hpp>
#endif

#include <typeflow/runtime/expr.hpp>
#include <typeflow/runtime/feed.hpp>
#include <typeflow/runtime/session.hpp>
#include <typeflow/runtime/thread_pool.hpp>

#include <typeflow/train/optimizers.hpp>

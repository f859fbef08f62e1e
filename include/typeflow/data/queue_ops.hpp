// typeflow/data/queue_ops.hpp — queues as graph ops: a training step that
// dequeues its batch inside session::run, and a graph that enqueues what it
// computes (TensorFlow's QueueDequeueMany and QueueEnqueue ops).
//
//   tf::fifo_queue<float, std::int32_t> q(256, {tf::dims{28, 28}, tf::dims{}});   // element shapes declared
//   tf::queue_runner feed(q, train_dataset);                                       // background producer
//   auto [images, labels] = tf::dequeue_many<64>(q, tf::shape<28, 28>{}, tf::shape<>{});  // [64, 28, 28], [64]
//   auto step = tf::train::adam(1e-3f).minimize(loss_of(images, labels));
//   s.run(step);                 // each run takes the next 64 elements
//
// A dequeue blocks the run until its elements are there; once the queue is
// closed and too short the run fails with tf::out_of_range_error (the end of
// the data), never hangs. The shapes given must be static and equal the
// shapes the queue declares (checked when the op is made), so the dequeued
// batch has static extents the rest of the graph can use.
//
//   s.run(tf::enqueue(q, image_expr, label_expr));       // computes both, then enqueues one element
//   s.run(tf::enqueue_many(q, images_expr, labels_expr)); // enqueues each row
//
// An enqueue blocks while the queue is full (back pressure); an enqueue into
// a closed queue fails with tf::cancelled_error. Its value is a scalar bool
// (true), to fetch or group with other ops. Each dequeue_many/enqueue call
// makes its own op: two calls dequeue twice per run, the outputs of one call
// share one dequeue.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/core/type_list.hpp>
#include <typeflow/data/queue.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/node.hpp>
#include <typeflow/expr/ops/outputs.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

/// A queue as a graph leaf (TensorFlow's queue resource handle): a scalar
/// int64 holding the queue's address, read only by the queue ops' kernels.
template <class Q>
struct queue_handle : detail::leaf_base {
    using value_type = std::int64_t;
    using shape_type = shape<>;
    using device = cpu;
    static constexpr bool pure = false;
    struct box {
        std::int64_t address = 0;
        const std::int64_t* data() const noexcept { return &address; }
    };
    std::shared_ptr<const box> data;
    const void* identity() const noexcept { return data.get(); }
    explicit queue_handle(Q& q)
        : data(std::make_shared<const box>(box{static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(&q))})) {}
};

namespace detail {
template <class Q>
Q& queue_of(const std::int64_t* handle) noexcept {
    return *reinterpret_cast<Q*>(static_cast<std::uintptr_t>(*handle));
}
// Component K's element type of queue Q.
template <class Q, std::size_t K>
using queue_component_t = typename std::tuple_element_t<K, typename Q::element>::value_type;
// [N, S...] (N > 0), or S (N == 0: one element).
template <index_t N, class S>
struct queue_batched {
    static constexpr dims value = [] {
        dims d = S::value;
        if (N == 0) return d;
        dims o;
        o.rank = d.rank + 1;
        o.d[0] = N;
        for (std::size_t i = 0; i < d.rank; ++i) o.d[i + 1] = d.d[i];
        return o;
    }();
    using type = shape_from_dims<value>;
};
// The queue's declared shapes against the op's, when the op is made.
template <class Q, class... S>
void check_queue_shapes(const Q& q, std::string_view op) {
    std::size_t k = 0;
    (
        [&] {
            const auto& declared = q.declared_shape(k);
            if (!declared || !(*declared == S::value))
                raise(message() << op << ": queue '" << q.name() << "' component " << static_cast<long long>(k)
                                << (declared ? " has the declared shape " : " has no declared shape")
                                << (declared ? *declared : dims{}) << ", the op's is " << S::value
                                << " (give the queue its element shapes)");
            ++k;
        }(),
        ...);
}
}  // namespace detail

namespace op {
/// dequeue<N, Q, S...>(handle): N elements of queue Q stacked on a new axis
/// 0 (N == 0: one element, no new axis); output k is component k, of shape
/// [N, S_k...].
template <index_t N, class Q, class... S>
struct queue_dequeue {
    static_assert(N >= 0);
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = N == 0 ? "dequeue" : "dequeue_many";
    static constexpr std::size_t outputs = sizeof...(S);
    template <class H>
    struct traits {
        using first = meta::at_t<0, S...>;
        using value_type = detail::queue_component_t<Q, 0>;
        using shape_type = typename detail::queue_batched<N, first>::type;
        using device = cpu;
        using outputs_list = decltype([]<std::size_t... K>(std::index_sequence<K...>) {
            return meta::list<result_traits<detail::queue_component_t<Q, K>,
                                            typename detail::queue_batched<N, meta::at_t<K, S...>>::type, cpu>...>{};
        }(std::index_sequence_for<S...>{}));
    };
    static dims infer(const dims&) { return detail::queue_batched<N, meta::at_t<0, S...>>::value; }
    static dims infer_output(std::size_t k, const dims&) {
        dims out;
        std::size_t i = 0;
        ((i++ == k ? void(out = detail::queue_batched<N, S>::value) : void()), ...);
        return out;
    }
};

/// enqueue<Many, Q>(handle, components...): adds one element (Many: each row
/// of the components) to queue Q; its value is true.
template <bool Many, class Q>
struct queue_enqueue {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = Many ? "enqueue_many" : "enqueue";
    template <class H, class... C>
    using traits = result_traits<bool, shape<>, cpu>;
    template <class... D>
    static dims infer(const D&...) {
        return dims{};
    }
};
}  // namespace op

/// Queue ops have no gradient: what comes out of a queue is data.
template <index_t N, class Q, class... S>
struct gradient<op::queue_dequeue<N, Q, S...>> : no_gradient {};
template <bool Many, class Q>
struct gradient<op::queue_enqueue<Many, Q>> : no_gradient {};

namespace detail {
template <index_t N, class Q, class... S>
auto make_dequeue(Q& q) {
    static_assert(sizeof...(S) == Q::components,
                  "typeflow: dequeue: give one static shape per component of the queue's elements");
    static_assert((S::is_static && ...), "typeflow: dequeue: the element shapes must be static");
    check_queue_shapes<Q, S...>(q, N == 0 ? "dequeue" : "dequeue_many");
    using Op = op::queue_dequeue<N, Q, S...>;
    if constexpr (sizeof...(S) == 1) return make_node<Op>(queue_handle<Q>(q));
    else return make_outputs<Op>(queue_handle<Q>(q));
}
template <bool Many, class Q, class... C>
auto make_enqueue(Q& q, const C&... c) {
    static_assert(sizeof...(C) == Q::components, "typeflow: enqueue: give one expression per component of the queue's elements");
    static_assert([]<std::size_t... K>(std::index_sequence<K...>) {
        return (std::is_same_v<value_type_t<meta::at_t<K, C...>>, queue_component_t<Q, K>> && ...);
    }(std::index_sequence_for<C...>{}), "typeflow: enqueue: a component's dtype differs from the queue's (use tf::cast<T>(e))");
    static_assert((std::is_same_v<device_t<C>, cpu> && ...), "typeflow: enqueue: queues hold host tensors; move the values to tf::cpu");
    return make_node<op::queue_enqueue<Many, Q>>(queue_handle<Q>(q), c...);
}
}  // namespace detail

/// N elements of q as a tuple of expressions, one per component, each
/// [N, shape...] (one expression when the queue has one component).
template <index_t N, class Q, shape_c... S>
auto dequeue_many(Q& q, S...) {
    static_assert(N > 0, "typeflow: dequeue_many: N must be positive");
    return detail::make_dequeue<N, Q, S...>(q);
}
/// One element of q (no batch axis).
template <class Q, shape_c... S>
auto dequeue(Q& q, S...) {
    return detail::make_dequeue<0, Q, S...>(q);
}
/// An op that adds the element (c...) to q when it runs.
template <class Q, expression... C>
auto enqueue(Q& q, const C&... c) {
    return detail::make_enqueue<false>(q, c...);
}
/// An op that adds each row of (c...) (axis 0) to q when it runs.
template <class Q, expression... C>
auto enqueue_many(Q& q, const C&... c) {
    return detail::make_enqueue<true>(q, c...);
}

template <index_t N, class Q, class... S>
struct kernel<cpu, op::queue_dequeue<N, Q, S...>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        Q& q = detail::queue_of<Q>(ctx.input(n.template child<0>()));
        typename Q::element e = N == 0 ? q.dequeue() : q.dequeue_many(N);
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (copy(std::get<K>(e), K == 0 ? static_cast<void*>(out) : ctx.output(K == 0 ? 1 : K)), ...);
        }(std::index_sequence_for<S...>{});
    }
    template <class T>
    static void copy(const tensor<T>& t, void* to) {
        if (t.size()) std::memcpy(to, t.data(), static_cast<std::size_t>(t.size()) * sizeof(T));
    }
};

template <bool Many, class Q>
struct kernel<cpu, op::queue_enqueue<Many, Q>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, bool* out) {
        Q& q = detail::queue_of<Q>(ctx.input(n.template child<0>()));
        typename Q::element e = [&]<std::size_t... K>(std::index_sequence<K...>) {
            return typename Q::element(component<K + 1>(n, ctx)...);
        }(std::make_index_sequence<Q::components>{});
        if constexpr (Many) q.enqueue_many(e);
        else q.enqueue(std::move(e));
        *out = true;
    }
    template <std::size_t I, class Nd, class Ctx>
    static auto component(const Nd& n, const Ctx& ctx) {
        using T = detail::queue_component_t<Q, I - 1>;
        tensor<T> t(ctx.dims_of(n.template child<I>()));
        if (t.size()) std::memcpy(t.data(), ctx.input(n.template child<I>()), static_cast<std::size_t>(t.size()) * sizeof(T));
        return t;
    }
};

}  // namespace typeflow

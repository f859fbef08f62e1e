// typeflow/expr/ops/rnn.hpp — the fused LSTM recurrence: all the steps of an
// LSTM layer in one kernel, which keeps each step's gates for the backward
// kernel (the CPU form of cuDNN's RNN forward-training and backward calls).
//
//   z = x W + b                        [time, batch, 4 units], gates i, f, g, o
//   s = lstm_sequence(z, U)            [time, batch, 6 units]: h, c, i, f, g, o per step
//   s = lstm_sequence(z, U, m)         m [time, batch] (1: the step counts, 0: masked)
//
// Step t: a = z_t + h_{t-1} U; i, f, o = sigmoid(a_i, a_f, a_o), g = tanh(a_g);
// c_t = f c_{t-1} + i g; h_t = o tanh(c_t); h_{-1} = c_{-1} = 0. Where m is 0
// the row keeps its h and c (Keras' masking). The gate columns are what the
// gradient reads; read h and c (the first 2 units columns).
//
// Gradient: dz = lstm_sequence_grad(s, ds, U[, m]) runs the steps backwards
// (one product with U^T per step); dU = lstm_recurrent_grad(s, dz) is one
// product over all steps. ds's gate columns are ignored, and the two gradient
// ops have no gradient of their own (no second derivatives through an LSTM).
#pragma once
#include <string_view>
#include <type_traits>

#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/diagnostics.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/node.hpp>
#include <typeflow/expr/op.hpp>

namespace typeflow::diagnostic {
/// First error line when an LSTM's gate inputs [time, batch, 4 units], its
/// recurrent kernel [units, 4 units] or its mask [time, batch] do not fit.
template <class Op, class GateInputsShape, class RecurrentKernelShape>
struct lstm_sequence_shapes_do_not_fit;
}  // namespace typeflow::diagnostic

namespace typeflow {

namespace detail {
// z [T, B, 4U] and u [U, 4U] (static U), and m [T, B] when masked.
constexpr bool lstm_shapes_fit(dims z, dims u) {
    return z.rank == 3 && u.rank == 2 && u.d[0] != dyn && u.d[0] > 0 && u.d[1] == 4 * u.d[0] && z.d[2] == u.d[1];
}
constexpr bool lstm_mask_fits(dims z, dims m) {
    return m.rank == 2 && (m.d[0] == z.d[0] || m.d[0] == dyn || z.d[0] == dyn) &&
           (m.d[1] == z.d[1] || m.d[1] == dyn || z.d[1] == dyn);
}
// The rule's result: [T, B, 6 * units], or the diagnostic.
template <class Op, class T, class Z, class U, class M>
constexpr auto lstm_rule() {
    constexpr dims z = shape_t<Z>::value, u = shape_t<U>::value;
    constexpr bool mask_ok = std::is_void_v<M> || lstm_mask_fits(z, shape_t<meta::if_t<std::is_void_v<M>, Z, M>>::value);
    using failure = require::first_failure_t<
        require::floating<Op, value_type_t<Z>>, require::same_dtype<Op, value_type_t<Z>, value_type_t<U>>,
        require::same_device<Op, device_t<Z>, device_t<U>>,
        // gate inputs [time, batch, 4 units], recurrent kernel [units, 4 units], mask [time, batch]
        require::that<lstm_shapes_fit(z, u) && mask_ok,
                      diagnostic::lstm_sequence_shapes_do_not_fit<Op, shape_t<Z>, shape_t<U>>>>;
    if constexpr (!std::is_void_v<failure>) {
        return rule_failed<failure>{};
    } else {
        constexpr dims out = dims{z.d[0], z.d[1], 6 * u.d[0]};
        return result_traits<T, shape_from_dims<out>, device_t<Z>>{};
    }
}
inline void lstm_check(std::string_view name, const dims& z, const dims& u, const dims* m) {
    if (!lstm_shapes_fit(z, u) || (m && (m->rank != 2 || m->d[0] != z.d[0] || m->d[1] != z.d[1])))
        typeflow::detail::raise(typeflow::detail::message()
                                << name << ": gate inputs " << z << ", recurrent kernel " << u
                                << (m ? ", mask " : "") << (m ? *m : dims{})
                                << " do not fit [time, batch, 4 units], [units, 4 units]" << (m ? ", [time, batch]" : ""));
}
}  // namespace detail

namespace op {
/// lstm_sequence<Masked>(z, u[, m]): every step of an LSTM; [T, B, 6U] (h, c,
/// i, f, g, o per step). See the top of this header.
template <bool Masked>
struct lstm_sequence {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "lstm_sequence";
    static constexpr bool masked = Masked;
    template <class Z, class U, class... M>
    static constexpr auto rule() {
        static_assert(sizeof...(M) == (Masked ? 1 : 0));
        return detail::lstm_rule<lstm_sequence, value_type_t<Z>, Z, U, meta::at_t<0, M..., void>>();
    }
    template <class... C>
    using traits = decltype(rule<C...>());
    static dims infer(const dims& z, const dims& u) {
        detail::lstm_check(name, z, u, nullptr);
        return dims{z.d[0], z.d[1], 6 * u.d[0]};
    }
    static dims infer(const dims& z, const dims& u, const dims& m) {
        detail::lstm_check(name, z, u, &m);
        return dims{z.d[0], z.d[1], 6 * u.d[0]};
    }
};

/// lstm_sequence_grad<Masked>(s, ds, u[, m]): the gradient of lstm_sequence
/// with respect to its gate inputs z, [T, B, 4U], given s = lstm_sequence(z,
/// u[, m]) and ds, s's adjoint (its h and c columns).
template <bool Masked>
struct lstm_sequence_grad {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "lstm_sequence_grad";
    static constexpr bool masked = Masked;
    template <class S, class DS, class U, class... M>
    using traits = result_traits<value_type_t<S>, shape<shape_t<S>::value.d[0], shape_t<S>::value.d[1], shape_t<U>::value.d[1]>,
                                 device_t<S>>;
    static dims infer(const dims& s, const dims& ds, const dims& u, const auto&... m) {
        if (s != ds || s.rank != 3 || s.d[2] != 6 * u.d[0] || ((m.rank != 2 || m.d[0] != s.d[0] || m.d[1] != s.d[1]) || ...))
            typeflow::detail::raise(typeflow::detail::message() << name << ": state " << s << " and its adjoint " << ds
                                                                << " do not fit the recurrent kernel " << u);
        return dims{s.d[0], s.d[1], u.d[1]};
    }
};

/// lstm_recurrent_grad(s, dz): the gradient of lstm_sequence with respect to
/// its recurrent kernel, sum over t of h_{t-1}^T dz_t, [U, 4U].
struct lstm_recurrent_grad {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "lstm_recurrent_grad";
    template <class S, class DZ>
    using traits = result_traits<value_type_t<S>, shape<shape_t<S>::value.d[2] / 6, 4 * (shape_t<S>::value.d[2] / 6)>,
                                 device_t<S>>;
    static dims infer(const dims& s, const dims& dz) {
        if (s.rank != 3 || dz.rank != 3 || s.d[0] != dz.d[0] || s.d[1] != dz.d[1] || s.d[2] * 2 != dz.d[2] * 3)
            typeflow::detail::raise(typeflow::detail::message()
                                    << name << ": state " << s << " and gate gradient " << dz << " do not fit");
        return dims{s.d[2] / 6, 4 * (s.d[2] / 6)};
    }
};
}  // namespace op

namespace detail {
/// Every step of an LSTM over gate inputs z [T, B, 4U] with recurrent kernel
/// u [U, 4U]: [T, B, 6U] (h, c, then the gates).
template <expression Z, expression U>
auto lstm_sequence(const Z& z, const U& u) {
    return make_node<op::lstm_sequence<false>>(z, u);
}
/// The same with a mask m [T, B] of z's dtype (0: the row keeps its state).
template <expression Z, expression U, expression M>
auto lstm_sequence(const Z& z, const U& u, const M& m) {
    return make_node<op::lstm_sequence<true>>(z, u, m);
}
}  // namespace detail

/// lstm_sequence: dz through the steps backwards, du one product over them; the mask gets none.
template <bool Masked>
struct gradient<op::lstm_sequence<Masked>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        const auto dz = [&] {
            if constexpr (Masked)
                return make_node<op::lstm_sequence_grad<true>>(n, g, n.template child<1>(), n.template child<2>());
            else return make_node<op::lstm_sequence_grad<false>>(n, g, n.template child<1>());
        };
        if constexpr (I == 0) return dz();
        else if constexpr (I == 1) return make_node<op::lstm_recurrent_grad>(n, dz());
        else return (void)n, (void)g, ad::zero{};
    }
};

}  // namespace typeflow

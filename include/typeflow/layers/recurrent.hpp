// typeflow/layers/recurrent.hpp — recurrent layers (Keras' SimpleRNN, LSTM,
// GRU). See layer.hpp for the protocol.
//
//   tf::layers::lstm<128>         [batch, time, features] -> [batch, 128] (the last step's output)
//   tf::layers::lstm<128, true>   [batch, time, features] -> [batch, time, 128] (every step's)
//
// Keras' layouts and defaults: kernel [features, G * units] (Glorot uniform),
// recurrent_kernel [units, G * units] (orthogonal), bias zeros, with G gates
// side by side: SimpleRNN 1; LSTM 4 in the order i, f, c, o, the forget gate's
// bias starting at 1 (unit_forget_bias); GRU 3 in the order z, r, h with
// reset_after (bias [2, 3 * units]: the input's and the recurrent one's).
// The input's product with the kernel, for every step, is one matrix product
// before the loop; each step is then one product with the recurrent kernel
// for all the gates, and fused element-wise work. The time extent may be dyn.
// LSTM runs its steps in one kernel (expr/ops/rnn.hpp) with a backward kernel
// that reuses the gates it kept; SimpleRNN and GRU are tf::scan loops, whose
// gradients recompute each step. Called with
// a mask [batch, time] (bool; Keras' mask_zero gives ids != 0), a masked step
// leaves the state as it was, so padded positions have no effect:
//   layer(x, mask, tf::training)
// with_state(x[, mask], mode) also gives the final state (Keras'
// return_state=True): std::tuple(output, h), and (output, h, c) for LSTM.
#pragma once
#include <cstdint>
#include <tuple>

#include <typeflow/expr/init.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/cast.hpp>
#include <typeflow/expr/ops/array.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/autodiff/loop.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/expr/ops/matmul.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/expr/ops/reshape.hpp>
#include <typeflow/expr/ops/rnn.hpp>
#include <typeflow/expr/ops/transpose.hpp>
#include <typeflow/layers/layer.hpp>

namespace typeflow::layers {

namespace expects {
/// [batch, time, features] with a static feature extent
struct batch_time_features;
}  // namespace expects

namespace detail {
constexpr bool is_sequence(dims in) { return in.rank == 3 && in.d[2] != dyn; }
// Zeros [batch, units] for a first state, from the gate inputs [time, batch, G * units].
template <index_t Units, class Z>
auto zero_state(const Z& z) {
    using T = value_type_t<Z>;
    return broadcast_like(literal<T, 0, 1, device_t<Z>>{}, sum<0>(slice<0, 0, 0>(z, sizes<-1, -1, Units>)));
}
// zero_state<Units>(*z) as a tf::let: the scan's name spells Z once, not
// the graph that reads z's shape.
template <index_t Units, class Z>
struct zero_state_of {
    const Z* z;
    auto operator()() const { return zero_state<Units>(*z); }
};
template <index_t Units, class Z>
auto zero_state_let(const Z& z) {
    return let(zero_state_of<Units, Z>{&z});
}
// The last step of a stack [time, batch, n].
template <class H>
auto last_step(const H& hs) {
    using i32 = std::int32_t;
    const auto steps = cast<i32>(make_node<op::reduced_count<0>>(hs));
    return gather(hs, steps - literal<i32, 1, 1, device_t<H>>{});
}
// A recurrent layer's output from its states [time, batch, units]: every
// step's (ReturnSequences, [batch, time, units]) or the last one's.
template <bool ReturnSequences, class H>
auto rnn_output(const H& hs) {
    if constexpr (ReturnSequences) return transpose<1, 0, 2>(hs);
    else return last_step(hs);
}
// Columns [K * Units, (K + 1) * Units) of z [batch, G * Units].
template <index_t K, index_t Units, class Z>
auto gate(const Z& z) {
    return slice<0, K * Units>(z, sizes<-1, Units>);
}
// The gate inputs [time, batch, W] with the mask [batch, time] (bool) as one
// more column, 1 where a step counts.
template <class Z, class M>
auto with_mask(const Z& z, const M& mask) {
    return concat<2>(z, cast<value_type_t<Z>>(expand_dims<2>(transpose<1, 0>(mask))));
}
// A step over gate inputs with a mask column at W: the new state where the
// step counts, the old one where it is masked (Keras' masking).
template <index_t W, class F>
auto masked_step(F step) {
    return [step](const auto& s, const auto& zt) {
        const auto m = slice<0, W>(zt, sizes<-1, 1>);
        using T = value_type_t<meta::remove_cvref_t<decltype(s)>>;
        return m * step(s, slice<0, 0>(zt, sizes<-1, W>)) +
               (literal<T, 1, 1, device_t<meta::remove_cvref_t<decltype(s)>>>{} - m) * s;
    };
}
// scan of a recurrent step over gate inputs z [time, batch, W], masked or not.
template <index_t W, class F, class Z, class S, class M>
auto run_steps(F step, const Z& z, const S& s0, const M* mask) {
    if constexpr (std::is_same_v<M, void>) return scan(step, z, s0, independent_rows);
    else return scan(masked_step<W>(step), with_mask(z, *mask), s0, independent_rows);
}
/// What the recurrent layers' bound types share: calls with and without a
/// mask, and with_state (Keras' return_state=True). Derived gives steps(x,
/// mask) (every step's state, [time, batch, ...]); h_of and output_and_state
/// read the output and the final states from it (Derived may hide them: LSTM's
/// state holds c and the gates too).
template <class Derived, bool ReturnSequences>
struct recurrent_calls {
    template <class X, mode_c M>
    auto operator()(const X& x, M) const {
        return rnn_output<ReturnSequences>(Derived::h_of(self().template steps<void>(x, nullptr)));
    }
    /// With mask [batch, time] (bool): a masked step leaves the state as it was.
    template <class X, class K, mode_c M>
    auto operator()(const X& x, const K& mask, M) const {
        return rnn_output<ReturnSequences>(Derived::h_of(self().steps(x, &mask)));
    }
    /// The output and the final state: std::tuple(output, h) (LSTM: (output, h, c)).
    template <class X, mode_c M>
    auto with_state(const X& x, M) const {
        return Derived::output_and_state(self().template steps<void>(x, nullptr));
    }
    /// The same with a mask: the states after the last step that counts.
    template <class X, class K, mode_c M>
    auto with_state(const X& x, const K& mask, M) const {
        return Derived::output_and_state(self().steps(x, &mask));
    }
    template <class S>
    static auto h_of(const S& s) {
        return s;
    }
    template <class S>
    static auto output_and_state(const S& hs) {
        return std::make_tuple(rnn_output<ReturnSequences>(hs), last_step(hs));
    }

private:
    const Derived& self() const { return static_cast<const Derived&>(*this); }
};
/// The LSTM bias: zeros, and ones for the forget gate (Keras' unit_forget_bias).
struct unit_forget_bias {
    index_t units = 0;
    template <class T>
    void operator()(tensor<T>& t, std::string_view) const {
        for (index_t i = 0; i < t.size(); ++i) t[i] = static_cast<T>(i >= units && i < 2 * units ? 1 : 0);
    }
};
}  // namespace detail

/// A fully connected recurrent layer: h_t = typeflow::tanh(x_t W + h_{t-1} U + b),
/// h_0 = 0 (Keras' SimpleRNN). The output is the last h, or every h when
/// ReturnSequences.
template <index_t Units, bool ReturnSequences = false>
struct simple_rnn {
    static_assert(Units > 0, "typeflow: layers::simple_rnn: the number of units must be positive");
    static constexpr fixed_string kind = "simple_rnn";
    static constexpr std::string_view class_name = "SimpleRNN";
    using expects = expects::batch_time_features;
    static constexpr bool accepts(dims in) { return detail::is_sequence(in); }

    template <fixed_string Name, dims In, class T, class D>
    struct bind : detail::recurrent_calls<bind<Name, In, T, D>, ReturnSequences> {
        static constexpr index_t in = In.d[2];
        static constexpr dims output = ReturnSequences ? dims{In.d[0], In.d[1], Units} : dims{In.d[0], Units};
        static constexpr index_t params = in * Units + Units * Units + Units, trainable_params = params;
        variable<detail::var_name<Name, "kernel">(), T, shape<in, Units>, D> kernel{init::glorot_uniform{}};
        variable<detail::var_name<Name, "recurrent_kernel">(), T, shape<Units, Units>, D> recurrent_kernel{
            init::orthogonal{}};
        variable<detail::var_name<Name, "bias">(), T, shape<Units>, D> bias{init::zeros{}};

        // One step: h_t from h_{t-1} [batch, units] and x_t W + b. A named
        // type, as the inputs' let: the scan's name spells bind, not x.
        struct step {
            const bind* self;
            template <class H, class Z>
            auto operator()(const H& h, const Z& zt) const {
                return typeflow::tanh(zt + matmul(h, self->recurrent_kernel));
            }
        };
        // x_t W + b for every step [time, batch, units], as a tf::let named by bind and X
        template <class X>
        struct inputs {
            const bind* self;
            const X* x;
            auto operator()() const { return matmul(transpose<1, 0, 2>(*x), self->kernel) + self->bias; }
        };
        // every step's state [time, batch, units]
        template <class K, class X>
        auto steps(const X& x, const K* mask) const {
            const auto z = let(inputs<X>{this, &x});
            return detail::run_steps<Units>(step{this}, z, detail::zero_state_let<Units>(z), mask);
        }
        template <class F>
        void for_each_variable(F&& f) const {
            f(kernel);
            f(recurrent_kernel);
            f(bias);
        }
    };
};

/// Long short-term memory (Keras' LSTM): gates i, f, o = sigmoid, g = tanh of
/// x_t W + h_{t-1} U + b (four blocks of Units, in the order i, f, g, o),
/// c_t = f c_{t-1} + i g, h_t = o typeflow::tanh(c_t), h_0 = c_0 = 0. The output is the
/// last h, or every h when ReturnSequences. The steps run in one fused kernel
/// (expr/ops/rnn.hpp) that keeps the gates for the backward pass.
template <index_t Units, bool ReturnSequences = false>
struct lstm {
    static_assert(Units > 0, "typeflow: layers::lstm: the number of units must be positive");
    static constexpr fixed_string kind = "lstm";
    static constexpr std::string_view class_name = "LSTM";
    using expects = expects::batch_time_features;
    static constexpr bool accepts(dims in) { return detail::is_sequence(in); }

    template <fixed_string Name, dims In, class T, class D>
    struct bind : detail::recurrent_calls<bind<Name, In, T, D>, ReturnSequences> {
        static constexpr index_t in = In.d[2];
        static constexpr dims output = ReturnSequences ? dims{In.d[0], In.d[1], Units} : dims{In.d[0], Units};
        static constexpr index_t params = 4 * (in * Units + Units * Units + Units), trainable_params = params;
        variable<detail::var_name<Name, "kernel">(), T, shape<in, 4 * Units>, D> kernel{init::glorot_uniform{}};
        variable<detail::var_name<Name, "recurrent_kernel">(), T, shape<Units, 4 * Units>, D> recurrent_kernel{
            init::orthogonal{}};
        variable<detail::var_name<Name, "bias">(), T, shape<4 * Units>, D> bias{detail::unit_forget_bias{Units}};

        template <class S>
        static auto h_of(const S& s) {
            return slice<0, 0, 0>(s, sizes<-1, -1, Units>);  // [time, batch, units]
        }
        template <class S>
        static auto output_and_state(const S& s) {
            return std::make_tuple(detail::rnn_output<ReturnSequences>(h_of(s)), detail::last_step(h_of(s)),
                                   detail::last_step(slice<0, 0, Units>(s, sizes<-1, -1, Units>)));
        }
        // every step's state [time, batch, 6 units]: h, c, then the gates
        template <class K, class X>
        auto steps(const X& x, const K* mask) const {
            const auto z = matmul(transpose<1, 0, 2>(x), kernel) + bias;  // [time, batch, 4 units]
            if constexpr (std::is_same_v<K, void>) return typeflow::detail::lstm_sequence(z, recurrent_kernel);
            else return typeflow::detail::lstm_sequence(z, recurrent_kernel, cast<T>(transpose<1, 0>(*mask)));
        }
        template <class F>
        void for_each_variable(F&& f) const {
            f(kernel);
            f(recurrent_kernel);
            f(bias);
        }
    };
};

/// Gated recurrent unit (Keras' GRU with reset_after, its default): with
/// a = x_t W + b_in and r_ = h_{t-1} U + b_rec in blocks z, r, h:
/// z = typeflow::sigmoid(a_z + r_z), r = typeflow::sigmoid(a_r + r_r), n = typeflow::tanh(a_h + r r_h),
/// h_t = z h_{t-1} + (1 - z) n, h_0 = 0. bias is [2, 3 * Units] (b_in, b_rec).
template <index_t Units, bool ReturnSequences = false>
struct gru {
    static_assert(Units > 0, "typeflow: layers::gru: the number of units must be positive");
    static constexpr fixed_string kind = "gru";
    static constexpr std::string_view class_name = "GRU";
    using expects = expects::batch_time_features;
    static constexpr bool accepts(dims in) { return detail::is_sequence(in); }

    template <fixed_string Name, dims In, class T, class D>
    struct bind : detail::recurrent_calls<bind<Name, In, T, D>, ReturnSequences> {
        static constexpr index_t in = In.d[2];
        static constexpr dims output = ReturnSequences ? dims{In.d[0], In.d[1], Units} : dims{In.d[0], Units};
        static constexpr index_t params = 3 * (in * Units + Units * Units + 2 * Units), trainable_params = params;
        variable<detail::var_name<Name, "kernel">(), T, shape<in, 3 * Units>, D> kernel{init::glorot_uniform{}};
        variable<detail::var_name<Name, "recurrent_kernel">(), T, shape<Units, 3 * Units>, D> recurrent_kernel{
            init::orthogonal{}};
        variable<detail::var_name<Name, "bias">(), T, shape<2, 3 * Units>, D> bias{init::zeros{}};

        // One step: h_t from h_{t-1} [batch, units] and a = x_t W + b_in. A
        // named type, as the inputs' let: the scan's name spells bind, not x.
        struct step {
            const bind* self;
            template <class H, class A>
            auto operator()(const H& h, const A& a) const {
                const auto r_ = matmul(h, self->recurrent_kernel) + reshape<3 * Units>(slice<1, 0>(self->bias, sizes<1, -1>));
                const auto u = typeflow::sigmoid(detail::gate<0, Units>(a) + detail::gate<0, Units>(r_));
                const auto r = typeflow::sigmoid(detail::gate<1, Units>(a) + detail::gate<1, Units>(r_));
                const auto n = typeflow::tanh(detail::gate<2, Units>(a) + r * detail::gate<2, Units>(r_));
                return u * h + (literal<value_type_t<H>, 1, 1, device_t<H>>{} - u) * n;
            }
        };
        // x_t W + b_in for every step [time, batch, 3 units], as a tf::let named by bind and X
        template <class X>
        struct inputs {
            const bind* self;
            const X* x;
            auto operator()() const {
                const auto b_in = reshape<3 * Units>(slice<0, 0>(self->bias, sizes<1, -1>));
                return matmul(transpose<1, 0, 2>(*x), self->kernel) + b_in;
            }
        };
        // every step's state [time, batch, units]
        template <class K, class X>
        auto steps(const X& x, const K* mask) const {
            const auto z = let(inputs<X>{this, &x});
            return detail::run_steps<3 * Units>(step{this}, z, detail::zero_state_let<Units>(z), mask);
        }
        template <class F>
        void for_each_variable(F&& f) const {
            f(kernel);
            f(recurrent_kernel);
            f(bias);
        }
    };
};

}  // namespace typeflow::layers

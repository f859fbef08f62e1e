// typeflow/layers/conv.hpp — the 2-D convolution layer (Keras' Conv2D).
//
//   tf::layers::conv2d<32, 3, tf::layers::relu>   3x3 filters, stride 1, VALID, as Conv2D(32, 3, activation='relu')
//   tf::layers::conv2d<16, 5, tf::layers::relu, tf::padding_mode::same, 2>
// Input [batch, H, W, C] (NHWC); variables "<name>/kernel" [K, K, C, Filters]
// (Glorot-uniform) and "<name>/bias" [Filters] (zeros).
#pragma once
#include <typeflow/expr/init.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/conv.hpp>
#include <typeflow/layers/core.hpp>

namespace typeflow::layers {

/// act(conv2d(x, kernel) + bias) with Filters square Kernel x Kernel filters.
template <index_t Filters, index_t Kernel, class Act = linear, padding_mode Pad = padding_mode::valid,
          index_t Stride = 1, index_t Dilation = 1>
struct conv2d {
    static_assert(Filters > 0 && Kernel > 0, "typeflow: layers::conv2d: filters and kernel size must be positive");
    static constexpr fixed_string kind = "conv2d";
    static constexpr std::string_view class_name = "Conv2D";
    using expects = expects::batch_height_width_channels;
    static constexpr typeflow::detail::conv2d_geometry geometry(dims in) {
        return typeflow::detail::conv2d_geometry_of(in, dims{Kernel, Kernel, in.rank == 4 ? in.d[3] : 0, Filters}, Stride,
                                                    Stride, Pad == padding_mode::same, Dilation, Dilation);
    }
    static constexpr bool accepts(dims in) {
        return in.rank == 4 && in.d[1] != dyn && in.d[2] != dyn && in.d[3] != dyn && geometry(in).ok();
    }

    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        static constexpr index_t channels = In.d[3];
        static constexpr dims output = geometry(In).out();
        static constexpr index_t params = Kernel * Kernel * channels * Filters + Filters, trainable_params = params;
        variable<detail::var_name<Name, "kernel">(), T, shape<Kernel, Kernel, channels, Filters>, D> kernel{
            init::glorot_uniform{}};
        variable<detail::var_name<Name, "bias">(), T, shape<Filters>, D> bias{init::zeros{}};

        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            return Act::apply(typeflow::conv2d(x, kernel, strides<Stride, Stride>, padding_tag<Pad>{},
                                               dilations<Dilation, Dilation>) +
                              bias);
        }
        template <class F>
        void for_each_variable(F&& f) const {
            f(kernel);
            f(bias);
        }
    };
};

}  // namespace typeflow::layers

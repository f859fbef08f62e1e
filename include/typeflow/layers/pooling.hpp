// typeflow/layers/pooling.hpp — pooling layers (Keras' MaxPooling2D,
// AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D).
//
//   tf::layers::max_pool2d<2>                       2x2 windows, stride 2, VALID (MaxPooling2D())
//   tf::layers::avg_pool2d<3, 1, tf::padding_mode::same>
//   tf::layers::global_avg_pool2d                   [batch, H, W, C] -> [batch, C]
#pragma once
#include <typeflow/expr/ops/pool.hpp>
#include <typeflow/layers/core.hpp>

namespace typeflow::layers {

namespace detail {
template <bool Max, index_t Pool, index_t Stride, padding_mode Pad>
struct pool2d_spec {
    static_assert(Pool > 0 && Stride > 0, "typeflow: layers::max_pool2d / avg_pool2d: pool size and strides must be positive");
    using expects = expects::batch_height_width_channels;
    static constexpr typeflow::detail::pool2d_geometry geometry(dims in) {
        return typeflow::detail::pool2d_geometry_of(in, Pool, Pool, Stride, Stride, Pad == padding_mode::same);
    }
    static constexpr bool accepts(dims in) {
        return in.rank == 4 && in.d[1] != dyn && in.d[2] != dyn && in.d[3] != dyn && geometry(in).ok();
    }
    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        static constexpr dims output = geometry(In).out();
        static constexpr index_t params = 0, trainable_params = 0;
        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            if constexpr (Max) return max_pool2d<Pool>(x, strides<Stride, Stride>, padding_tag<Pad>{});
            else return avg_pool2d<Pool>(x, strides<Stride, Stride>, padding_tag<Pad>{});
        }
        template <class F>
        void for_each_variable(F&&) const {}
    };
};
template <bool Max>
struct global_pool2d_spec {
    using expects = expects::batch_height_width_channels;
    static constexpr bool accepts(dims in) { return in.rank == 4 && in.d[3] != dyn; }
    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        static constexpr dims output{In.d[0], In.d[3]};
        static constexpr index_t params = 0, trainable_params = 0;
        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            if constexpr (Max) return global_max_pool2d(x);
            else return global_avg_pool2d(x);
        }
        template <class F>
        void for_each_variable(F&&) const {}
    };
};
}  // namespace detail

/// The maximum over Pool x Pool windows (stride Stride, default Pool; VALID by default).
template <index_t Pool = 2, index_t Stride = Pool, padding_mode Pad = padding_mode::valid>
struct max_pool2d : detail::pool2d_spec<true, Pool, Stride, Pad> {
    static constexpr fixed_string kind = "max_pooling2d";
    static constexpr std::string_view class_name = "MaxPooling2D";
};
/// The mean over Pool x Pool windows (SAME padding averages only the elements inside).
template <index_t Pool = 2, index_t Stride = Pool, padding_mode Pad = padding_mode::valid>
struct avg_pool2d : detail::pool2d_spec<false, Pool, Stride, Pad> {
    static constexpr fixed_string kind = "average_pooling2d";
    static constexpr std::string_view class_name = "AveragePooling2D";
};
/// The mean over height and width: [batch, H, W, C] -> [batch, C].
struct global_avg_pool2d : detail::global_pool2d_spec<false> {
    static constexpr fixed_string kind = "global_average_pooling2d";
    static constexpr std::string_view class_name = "GlobalAveragePooling2D";
};
/// The maximum over height and width: [batch, H, W, C] -> [batch, C].
struct global_max_pool2d : detail::global_pool2d_spec<true> {
    static constexpr fixed_string kind = "global_max_pooling2d";
    static constexpr std::string_view class_name = "GlobalMaxPooling2D";
};

}  // namespace typeflow::layers

// Compile-fail cases of the array ops (concat, slice, split, stack, unstack,
// pad, tile, flatten): each TF_FAIL_array_<name> block is one misuse that must
// not compile, and the first error line must name the op and the shapes
// (array_cases.cmake beside this file). Without a define everything here
// compiles: the positive control, with the valid twin of each case.
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main() {
    tf::placeholder<"m", float, tf::shape<2, 3>> m;
    tf::placeholder<"n", float, tf::shape<2, 4>> n;
    tf::placeholder<"v", float, tf::shape<3>> v;
    tf::placeholder<"d", double, tf::shape<2, 3>> d;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    tf::placeholder<"s", float, tf::shape<>> s;
    tf::variable<"g", float, tf::shape<2, 3>, tf::gpu<0>> g;

    // the valid twins of the cases below
    auto ok_concat = tf::concat<-1>(m, n, tf::concat<0>(x, m));
    auto ok_concat_dyn = tf::concat<1>(x, n);  // x's dyn batch meets n's 2
    auto ok_slice = tf::slice<1, 0>(m, tf::sizes<1, -1>);
    auto ok_slice_end = tf::slice<2, 3>(m);  // an empty box at the end
    auto [ok_s0, ok_s1, ok_s2] = tf::split<1, 3>(m);
    auto [ok_p0, ok_p1] = tf::split<-1>(n, tf::sizes<3, -1>);
    auto ok_stack = tf::stack<2>(m, x, m);
    auto [ok_u0, ok_u1, ok_u2] = tf::unstack<-1>(x);
    auto ok_pad = tf::pad<tf::paddings<{1, 1}, {0, 2}>>(m, 3.f);
    auto ok_reflect = tf::pad<tf::paddings<{1, 1}, {2, 2}>, tf::pad_mode::reflect>(m);
    auto ok_symmetric = tf::pad<tf::paddings<{2, 2}, {3, 3}>, tf::pad_mode::symmetric>(m);
    auto ok_tile = tf::tile<2, 0>(m);
    auto ok_flatten = tf::flatten(v);
    (void)ok_concat, (void)ok_concat_dyn, (void)ok_slice, (void)ok_slice_end, (void)ok_s0, (void)ok_s1, (void)ok_s2;
    (void)ok_p0, (void)ok_p1, (void)ok_stack, (void)ok_u0, (void)ok_u1, (void)ok_u2, (void)ok_pad, (void)ok_reflect;
    (void)ok_symmetric, (void)ok_tile, (void)ok_flatten, (void)s, (void)g, (void)d;

#ifdef TF_FAIL_array_concat_rank
    auto bad = tf::concat<0>(m, v);  // rank 2 and rank 1
#endif
#ifdef TF_FAIL_array_concat_axis
    auto bad = tf::concat<2>(m, n);  // no axis 2 in rank 2
#endif
#ifdef TF_FAIL_array_concat_extents
    auto bad = tf::concat<0>(m, n);  // 3 columns and 4
#endif
#ifdef TF_FAIL_array_concat_dtype
    auto bad = tf::concat<0>(m, d);  // float and double
#endif
#ifdef TF_FAIL_array_concat_device
    auto bad = tf::concat<0>(m, g);  // cpu and gpu<0>
#endif
#ifdef TF_FAIL_array_slice_rank
    auto bad = tf::slice<0>(m, tf::sizes<1>);  // one begin for two axes
#endif
#ifdef TF_FAIL_array_slice_bounds
    auto bad = tf::slice<1, 1>(m, tf::sizes<2, 1>);  // rows 1..2 of 2
#endif
#ifdef TF_FAIL_array_slice_begin
    auto bad = tf::slice<-1, 0>(m);
#endif
#ifdef TF_FAIL_array_sizes
    auto bad = tf::slice<0, 0>(m, tf::sizes<-2, 1>);
#endif
#ifdef TF_FAIL_array_split_axis
    auto bad = tf::split<2, 2>(m);
#endif
#ifdef TF_FAIL_array_split_divisible
    auto bad = tf::split<1, 2>(m);  // 3 into 2 equal parts
#endif
#ifdef TF_FAIL_array_split_sizes
    auto bad = tf::split<1>(m, tf::sizes<1, 1>);  // 2 of 3
#endif
#ifdef TF_FAIL_array_split_rest
    auto bad = tf::split<1>(m, tf::sizes<-1, -1>);
#endif
#ifdef TF_FAIL_array_split_zero
    auto bad = tf::split<1, 0>(m);
#endif
#ifdef TF_FAIL_array_stack_rank
    auto bad = tf::stack<0>(m, v);
#endif
#ifdef TF_FAIL_array_stack_axis
    auto bad = tf::stack<3>(m, m);  // a new axis at most at position 2
#endif
#ifdef TF_FAIL_array_stack_shapes
    auto bad = tf::stack<0>(m, n);
#endif
#ifdef TF_FAIL_array_unstack_axis
    auto bad = tf::unstack<2>(m);
#endif
#ifdef TF_FAIL_array_unstack_dyn
    auto bad = tf::unstack<0>(x);  // how many results?
#endif
#ifdef TF_FAIL_array_pad_rank
    auto bad = tf::pad<tf::paddings<{1, 1}>>(m);  // one pair for two axes
#endif
#ifdef TF_FAIL_array_pad_reflect
    auto bad = tf::pad<tf::paddings<{2, 0}, {0, 0}>, tf::pad_mode::reflect>(m);  // 2 rows reflect by 1 at most
#endif
#ifdef TF_FAIL_array_pad_negative
    auto bad = tf::pad<tf::paddings<{1, -1}, {0, 0}>>(m);
#endif
#ifdef TF_FAIL_array_tile_rank
    auto bad = tf::tile<2>(m);
#endif
#ifdef TF_FAIL_array_tile_negative
    auto bad = tf::tile<2, -1>(m);
#endif
#ifdef TF_FAIL_array_flatten_rank
    auto bad = tf::flatten(s);
#endif
#if defined(TF_FAIL_array_concat_rank) || defined(TF_FAIL_array_concat_axis) || defined(TF_FAIL_array_concat_extents) || \
    defined(TF_FAIL_array_concat_dtype) || defined(TF_FAIL_array_concat_device) || defined(TF_FAIL_array_slice_rank) ||   \
    defined(TF_FAIL_array_slice_bounds) || defined(TF_FAIL_array_slice_begin) || defined(TF_FAIL_array_sizes) ||         \
    defined(TF_FAIL_array_split_axis) || defined(TF_FAIL_array_split_divisible) || defined(TF_FAIL_array_split_sizes) || \
    defined(TF_FAIL_array_split_rest) || defined(TF_FAIL_array_split_zero) || defined(TF_FAIL_array_stack_rank) ||       \
    defined(TF_FAIL_array_stack_axis) || defined(TF_FAIL_array_stack_shapes) || defined(TF_FAIL_array_unstack_axis) ||  \
    defined(TF_FAIL_array_unstack_dyn) || defined(TF_FAIL_array_pad_rank) || defined(TF_FAIL_array_pad_reflect) ||      \
    defined(TF_FAIL_array_pad_negative) || defined(TF_FAIL_array_tile_rank) || defined(TF_FAIL_array_tile_negative) ||   \
    defined(TF_FAIL_array_flatten_rank)
    (void)bad;
#endif
}

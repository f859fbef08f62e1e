// Compile-fail cases of tf::cond, tf::switch_case (autodiff/cond.hpp),
// tf::while_loop, tf::scan and tf::map_fn (autodiff/loop.hpp):
// each TF_FAIL_<name> block is one misuse that must not compile; the first
// error line names the problem and both shapes or dtypes (control_cases.cmake
// beside this file). Without a define, everything here compiles: the
// positive control.
#include <typeflow/models.hpp>  // first: the checks' precompiled header (tests/CMakeLists.txt)
#include <cstdint>
#include <tuple>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main() {
    tf::placeholder<"p", bool, tf::shape<>> p;
    tf::placeholder<"pv", bool, tf::shape<3>> pv;
    tf::placeholder<"pf", float, tf::shape<>> pf;
    tf::placeholder<"i", std::int32_t, tf::shape<>> i;
    tf::placeholder<"x", float, tf::shape<2, 3>> x;
    tf::placeholder<"xd", float, tf::shape<tf::dyn, 3>> xd;
    tf::placeholder<"xx", double, tf::shape<2, 3>> xx;

    // the valid twins of the cases below
    auto ok_cond = tf::cond(p, [&] { return x * 2.f; }, [&] { return x + 1.f; });
    auto ok_dyn = tf::cond(p, [&] { return x * 2.f; }, [&] { return xd + 1.f; });  // [2,3] and [?,3] agree
    auto ok_switch = tf::switch_case(i, [&] { return x; }, [&] { return -x; });
    auto ok_while = tf::while_loop([](const auto& v) { return tf::sum(v) < 9.f; }, [](const auto& v) { return v * 2.f; }, x, 5);
    auto ok_scan = tf::scan([](const auto& a, const auto& r) { return a + r; }, xd, tf::sum<0>(x));
    auto [ok_a, ok_b] = tf::while_loop([](const auto& a, const auto&) { return tf::sum(a) < 9.f; },
                                       [](const auto& a, const auto& b) { return std::make_tuple(a + b, b); },
                                       std::make_tuple(x, x * 2.f), 5);
    auto [ok_sa, ok_sb] = tf::scan([](const auto& a, const auto& b, const auto& r) { return std::make_tuple(a + r, b * r); },
                                   xd, std::make_tuple(tf::sum<0>(x), tf::sum<0>(x)));
    auto ok_map = tf::map_fn([](const auto& r) { return tf::sum(r); }, xd);
    tf::placeholder<"seq", float, tf::shape<tf::dyn, 5, 3>> seq;
    tf::layers::layer<"ok_rnn", tf::layers::lstm<3>> ok_rnn;
    auto ok_lstm = ok_rnn(seq, tf::inference);
    (void)ok_lstm;
    (void)ok_cond, (void)ok_dyn, (void)ok_switch, (void)ok_while, (void)ok_scan;
    (void)ok_a, (void)ok_b, (void)ok_sa, (void)ok_sb, (void)ok_map;

#ifdef TF_FAIL_cond_shapes
    auto bad = tf::cond(p, [&] { return x; }, [&] { return tf::transpose(x); });
    (void)bad;
#endif
#ifdef TF_FAIL_cond_dtypes
    auto bad = tf::cond(p, [&] { return x; }, [&] { return xx; });
    (void)bad;
#endif
#ifdef TF_FAIL_cond_predicate_shape
    auto bad = tf::cond(pv, [&] { return x; }, [&] { return x; });
    (void)bad;
#endif
#ifdef TF_FAIL_cond_predicate_dtype
    auto bad = tf::cond(pf, [&] { return x; }, [&] { return x; });
    (void)bad;
#endif
#ifdef TF_FAIL_cond_not_expression
    auto bad = tf::cond(p, [&] { return 1.f; }, [&] { return x; });
    (void)bad;
#endif
#ifdef TF_FAIL_switch_index
    auto bad = tf::switch_case(pf, [&] { return x; }, [&] { return x; });
    (void)bad;
#endif
#ifdef TF_FAIL_scan_rows_rank
    auto bad = tf::scan([](const auto& a, const auto& r) { return a + r; }, tf::sum<1>(x), tf::sum(x), tf::independent_rows);
    (void)bad;
#endif
#ifdef TF_FAIL_scan_rows_static
    tf::placeholder<"e", double, tf::shape<4, 2, tf::dyn>> e;
    tf::variable<"w", double, tf::shape<>> w{tf::init::ones{}};
    auto s = tf::scan([&](const auto& a, const auto& r) { return a * w + r; }, e, tf::gather(e, tf::literal<std::int32_t, 0>{}),
                      tf::independent_rows);
    auto bad = tf::grad(tf::sum(s), w);
    (void)bad;
#endif
#ifdef TF_FAIL_lstm_input
    tf::layers::layer<"rnn", tf::layers::lstm<3>> rnn;
    auto bad = rnn(x, tf::inference);
    (void)bad;
#endif
#ifdef TF_FAIL_lstm_units
    tf::layers::layer<"r0", tf::layers::lstm<0>> bad;
    (void)bad(seq, tf::inference);
#endif
#ifdef TF_FAIL_gru_units
    tf::layers::layer<"g0", tf::layers::gru<0>> bad;
    (void)bad(seq, tf::inference);
#endif
#ifdef TF_FAIL_simple_rnn_units
    tf::layers::layer<"s0", tf::layers::simple_rnn<0>> bad;
    (void)bad(seq, tf::inference);
#endif
#ifdef TF_FAIL_while_body_shape
    auto bad = tf::while_loop([](const auto&) { return tf::literal<bool, 1>{}; }, [](const auto& v) { return tf::transpose(v); }, x, 5);
    (void)bad;
#endif
#ifdef TF_FAIL_while_body_dtype
    auto bad = tf::while_loop([](const auto&) { return tf::literal<bool, 1>{}; }, [](const auto& v) { return tf::cast<double>(v); }, x, 5);
    (void)bad;
#endif
#ifdef TF_FAIL_while_condition
    auto bad = tf::while_loop([](const auto& v) { return tf::sum(v); }, [](const auto& v) { return v; }, x, 5);
    (void)bad;
#endif
#ifdef TF_FAIL_scan_scalar
    auto bad = tf::scan([](const auto& a, const auto& r) { return a + r; }, pf, pf);
    (void)bad;
#endif
#ifdef TF_FAIL_while_in_while_grad
    tf::variable<"wv", float, tf::shape<2, 3>> wv{tf::init::ones{}};
    auto nested = tf::while_loop([](const auto& i, const auto&) { return i < 2; },
                                 [&](const auto& v) {
                                     return tf::while_loop([](const auto& j, const auto&) { return j < 2; },
                                                           [&](const auto& u) { return u * wv; }, v, 3);
                                 },
                                 wv * 1.f, 3);
    auto bad = tf::grad(tf::sum(nested), wv);
    (void)bad;
#endif
#ifdef TF_FAIL_while_vars_dtype
    auto [bad_a, bad_b] = tf::while_loop([](const auto&, const auto&) { return tf::literal<bool, 1>{}; },
                                         [](const auto& a, const auto& b) { return std::make_tuple(a, b); },
                                         std::make_tuple(x, xx), 5);
#endif
#ifdef TF_FAIL_while_vars_dyn
    auto [bad_a, bad_b] = tf::while_loop([](const auto&, const auto&) { return tf::literal<bool, 1>{}; },
                                         [](const auto& a, const auto& b) { return std::make_tuple(a, b); },
                                         std::make_tuple(x, xd), 5);
#endif
#ifdef TF_FAIL_while_vars_arity
    auto bad = tf::while_loop([](const auto&, const auto&) { return tf::literal<bool, 1>{}; },
                              [](const auto& a, const auto&) { return a; }, std::make_tuple(x, x), 5);
    (void)bad;
#endif
#ifdef TF_FAIL_while_vars_shape
    auto bad = tf::while_loop([](const auto&, const auto&) { return tf::literal<bool, 1>{}; },
                              [](const auto& a, const auto& b) { return std::make_tuple(a, tf::transpose(b)); },
                              std::make_tuple(x, x), 5);
    (void)bad;
#endif
#ifdef TF_FAIL_while_vars_body_dtype
    auto bad = tf::while_loop([](const auto&, const auto&) { return tf::literal<bool, 1>{}; },
                              [](const auto& a, const auto& b) { return std::make_tuple(tf::cast<double>(a), b); },
                              std::make_tuple(x, x), 5);
    (void)bad;
#endif
#ifdef TF_FAIL_scan_vars_shape
    auto bad = tf::scan([](const auto& a, const auto& b, const auto& r) { return std::make_tuple(a + r, tf::sum(b)); },
                        xd, std::make_tuple(tf::sum<0>(x), tf::sum<0>(x)));
    (void)bad;
#endif
#ifdef TF_FAIL_map_fn_scalar
    auto bad = tf::map_fn([](const auto& r) { return r; }, pf);
    (void)bad;
#endif
#ifdef TF_FAIL_map_fn_dyn
    auto bad = tf::map_fn([&](const auto& r) { return xd * tf::sum(r); }, x);
    (void)bad;
#endif
    return 0;
}

// Compile-fail cases of the distributed layer's compile-time parts: variable
// placement (distributed/placement.hpp) and the mirrored strategy
// (distributed/mirrored.hpp). Each TF_FAIL_<name> block is one misuse that
// must not compile, and the first error line must say what is wrong
// (dist_cases.cmake beside this file). Without a define, everything here
// compiles: that is the positive control.
#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/mirrored.hpp>
#include <typeflow/distributed/placement.hpp>

namespace tf = typeflow;
namespace tfd = typeflow::dist;

using w = tf::variable<"w", float, tf::shape<4, 3>>;
using b = tf::variable<"b", float, tf::shape<3>>;
using other = tf::variable<"other", float, tf::shape<3>>;

int main() {
    // the valid twins of the cases below
    using ok = tfd::placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>, w, b>;
    static_assert(ok::ps_of<w>(1) >= 0);
    (void)tfd::placement<1, tfd::round_robin, tfd::min_max_partitioner<2, 64>, w>::shard_count;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 4>> x;
    w wv;
    tf::variable<"n", int, tf::shape<3>> n;
    auto loss = tf::mean(tf::matmul(x, wv));
    (void)loss;
    (void)n;
#ifdef TF_FAIL_placement_no_ps
    (void)tfd::placement<0, tfd::round_robin, tfd::no_partitioner, w>::shard_count;
#endif
#ifdef TF_FAIL_placement_no_vars
    (void)tfd::placement<2, tfd::round_robin, tfd::no_partitioner>::shard_count;
#endif
#ifdef TF_FAIL_placement_strategy
    (void)tfd::placement<2, int, tfd::no_partitioner, w>::shard_count;
#endif
#ifdef TF_FAIL_placement_not_variable
    (void)tfd::placement<2, tfd::round_robin, tfd::no_partitioner, decltype(x)>::shard_count;
#endif
#ifdef TF_FAIL_placement_fixed_zero
    (void)tfd::placement<2, tfd::round_robin, tfd::fixed_size_partitioner<0>, w>::shard_count;
#endif
#ifdef TF_FAIL_placement_min_max_zero
    (void)tfd::placement<2, tfd::round_robin, tfd::min_max_partitioner<0>, w>::shard_count;
#endif
#ifdef TF_FAIL_placement_not_listed
    (void)ok::ps_of<other>();
#endif
}

#if defined(TF_FAIL_mirrored_int) || defined(TF_FAIL_mirrored_scalar) || defined(TF_FAIL_mirrored_metric)
// a function template: the step is only made when it is called
template <class C>
void make_step(C& comm) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 4>> x;
    w wv;
#if defined(TF_FAIL_mirrored_int)  // the optimizer's own check comes first
    tf::variable<"n", int, tf::shape<4, 3>> n;
    (void)tfd::mirrored(comm, tf::train::sgd(0.1f)).minimize(tf::mean(tf::cast<float>(n)), n);
#elif defined(TF_FAIL_mirrored_metric)  // a metric the step would average must be a scalar
    (void)tfd::mirrored(comm, tf::train::sgd(0.1f))
        .minimize_reporting(tf::mean(tf::matmul(x, wv)), std::make_tuple(tf::mean(x), tf::matmul(x, wv)), wv);
#else
    (void)tfd::mirrored(comm, tf::train::sgd(0.1f)).minimize(tf::matmul(x, wv), wv);
#endif
}
template void make_step<tfd::collective>(tfd::collective&);
#endif

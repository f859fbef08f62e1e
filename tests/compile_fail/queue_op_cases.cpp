// Compile-fail cases of the queue graph ops (data/queue_ops.hpp): each
// TF_FAIL_<name> block is one misuse that must not compile; the first error
// line says what is wrong (queue_op_cases.cmake beside this file). Without a
// define, everything here compiles: the positive control.
#include <typeflow/typeflow.hpp>  // first: the checks' precompiled header (tests/CMakeLists.txt)
#include <cstdint>

#include <typeflow/data.hpp>

namespace tf = typeflow;

int main() {
    tf::fifo_queue<float, std::int32_t> q(8, {tf::dims{2}, tf::dims{}});
    tf::placeholder<"x", float, tf::shape<2>> x;
    tf::placeholder<"k", std::int32_t, tf::shape<>> k;
    auto ok = tf::dequeue_many<4>(q, tf::shape<2>{}, tf::shape<>{});
    auto put = tf::enqueue(q, x, k);
    (void)ok, (void)put;
#ifdef TF_FAIL_dequeue_shape_count
    auto bad = tf::dequeue_many<4>(q, tf::shape<2>{});
    (void)bad;
#endif
#ifdef TF_FAIL_dequeue_dyn_shape
    auto bad = tf::dequeue_many<4>(q, tf::shape<tf::dyn>{}, tf::shape<>{});
    (void)bad;
#endif
#ifdef TF_FAIL_dequeue_many_zero
    auto bad = tf::dequeue_many<0>(q, tf::shape<2>{}, tf::shape<>{});
    (void)bad;
#endif
#ifdef TF_FAIL_enqueue_count
    auto bad = tf::enqueue(q, x);
    (void)bad;
#endif
#ifdef TF_FAIL_enqueue_dtype
    auto bad = tf::enqueue(q, x, tf::cast<float>(k));
    (void)bad;
#endif
#ifdef TF_FAIL_enqueue_device
    tf::placeholder<"r", float, tf::shape<2>, tf::reference> r;
    tf::placeholder<"rk", std::int32_t, tf::shape<>, tf::reference> rk;
    auto bad = tf::enqueue(q, r, rk);
    (void)bad;
#endif
}

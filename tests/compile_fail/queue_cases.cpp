// Compile-fail cases of the queues (data/queue.hpp): each TF_FAIL_<name>
// block is one misuse that must not compile (queue_cases.cmake beside this
// file). Without a define, everything here compiles: the positive control.
#include <typeflow/typeflow.hpp>  // first: the checks' precompiled header (tests/CMakeLists.txt)
#include <cstdint>

#include <typeflow/data/queue.hpp>

namespace tf = typeflow;

int main() {
    tf::fifo_queue<float> ok_fifo(4);
    tf::random_shuffle_queue<float, std::int32_t> ok_shuffle(4, 1);
    tf::priority_queue<> ok_priority(4);  // the priority alone
    (void)ok_fifo, (void)ok_shuffle, (void)ok_priority;

#ifdef TF_FAIL_queue_no_component
    tf::fifo_queue<> bad(4);
    (void)bad;
#endif
    return 0;
}

// Compile-fail cases of a parameter-server loss that is not a scalar
// (distributed/parameter_server.hpp) and a monitored session's step that is
// not an integer (train/monitored_session.hpp), apart from coverage_cases.cpp
// because their headers take as long to parse as the rest of the library.
// Each TF_FAIL_<name> block is one misuse that must not compile; the first
// error line says what is wrong (coverage_cases.cmake). Without a define,
// everything here compiles: that is the positive control.
#include <typeflow/typeflow.hpp>  // first: the checks' precompiled header (tests/CMakeLists.txt)
#include <typeflow/distributed/parameter_server.hpp>
#include <typeflow/train/monitored_session.hpp>

#include <cstdint>

namespace tf = typeflow;
namespace tfd = typeflow::dist;

int main() {
    tf::placeholder<"x", float, tf::shape<2, 3>> x;
    tf::variable<"w", float, tf::shape<2, 3>> w{tf::init::zeros{}};
    tf::variable<"step", std::int64_t, tf::shape<>> step{tf::init::zeros{}};
    tf::variable<"fstep", float, tf::shape<>> fstep{tf::init::zeros{}};
    (void)fstep;

    // the valid twins of the cases below (compiled, never run)
    [[maybe_unused]] auto ok_monitored = [&] { return tf::train::monitored_session({}, tf::io::saver{}, step); };
    tfd::transport* transport = nullptr;
    using placement = tfd::ps_placement<1, tfd::round_robin, tfd::no_partitioner>;
    [[maybe_unused]] auto ok_ps = [&] {
        return tfd::parameter_servers<placement>(*transport, tf::train::sgd(0.1f)).minimize(tf::sum(w * x));
    };

#ifdef TF_FAIL_ps_loss_not_scalar
    [[maybe_unused]] auto bad = [&] {
        return tfd::parameter_servers<placement>(*transport, tf::train::sgd(0.1f)).minimize(w * x);
    };
#endif
#ifdef TF_FAIL_monitored_step_float
    [[maybe_unused]] auto bad = [&] { return tf::train::monitored_session({}, tf::io::saver{}, fstep); };
#endif
    return 0;
}

// Recovery of parameter-server training (distributed/ps_checkpoints.hpp), run
// under typeflow-launch --restart with 2 workers and 2 ps tasks: the MLP of
// ps_test (double precision, Adam), trained synchronously for <steps> steps on
// one fixed batch, checkpointed every 4 updates. In the first attempt
// (TYPEFLOW_ATTEMPT=0) one ps dies:
//   ps:Q@K       worker 0 kills ps Q with SIGKILL before its step K
//   ps:Q@save:K  ps Q kills itself while it writes its shard of step K (K a
//                multiple of 4), after the first bytes reached the file
//   none         nobody dies
// Every task then fails, the launcher starts the job again, the ps tasks
// restore the last committed checkpoint and the workers resume at its step.
// Worker 0 checks that the final weights equal single-process training for
// <steps> steps on the whole batch within summation-order tolerance (so the
// restore brought back the variables, Adam's slots and its step counts), that
// it resumed at a committed step no later than K, and, for ps:Q@save:K, before
// K (the shard cut off mid-write was never used).
//
//   ps_recovery_test <dir> <steps> <kill>
#include <typeflow/dist.hpp>
#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/parameter_server.hpp>
#include <typeflow/distributed/ps_checkpoints.hpp>

#include "mlp_support.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace tf = typeflow;
namespace tfd = typeflow::dist;
using tfd_test::expect;
using tfd_test::init;
using tfd_test::max_rel_diff;
using tfd_test::mlp_loss;

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: ps_recovery_test <dir> <steps> <none | ps:Q@K | ps:Q@save:K>\n");
        return 2;
    }
    const std::string dir = argv[1], kill = argv[3];
    const int steps = std::atoi(argv[2]);
    const char* attempt_env = std::getenv("TYPEFLOW_ATTEMPT");
    const int attempt = attempt_env ? std::atoi(attempt_env) : 0;
    // the kill: which ps, at which step, and whether while saving
    int kill_ps = -1, kill_step = -1;
    bool in_save = false;
    if (kill != "none") {
        const auto at = kill.find('@');
        expect(kill.rfind("ps:", 0) == 0 && at != std::string::npos, "bad kill spec " + kill);
        kill_ps = std::atoi(kill.substr(3, at - 3).c_str());
        std::string when = kill.substr(at + 1);
        in_save = when.rfind("save:", 0) == 0;
        kill_step = std::atoi(when.substr(in_save ? 5 : 0).c_str());
    }
    try {
        tfd::transport t(tfd::cluster_spec::from_env());
        const tfd::cluster_spec& spec = t.spec();
        const bool is_ps = spec.task.type == tfd::role::ps;
        int workers = 0;
        for (int r = 0; r < spec.size(); ++r) workers += spec.task_of(r).type != tfd::role::ps;
        const int me = is_ps ? -1 : spec.rank();

        tf::placeholder<"x", double, tf::shape<tf::dyn, 4>> x;
        tf::placeholder<"y", double, tf::shape<tf::dyn, 1>> y;
        tf::variable<"w1", double, tf::shape<4, 8>> w1;
        tf::variable<"b1", double, tf::shape<8>> b1;
        tf::variable<"w2", double, tf::shape<8, 1>> w2;
        tf::variable<"b2", double, tf::shape<1>> b2;
        init(w1, 0), init(b1, 10), init(w2, 20), init(b2, 30);
        const tfd_test::batch_split split(24, workers, me);
        using placement = tfd::ps_placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>>;
        auto training = tfd::parameter_servers<placement>(t, tf::train::adam(0.01)).minimize(mlp_loss(x, y, w1, b1, w2, b2));
        tfd::ps_checkpoints ckpt(training, {.dir = dir, .every = 4, .keep = 2});
        tf::session s;
        if (is_ps) {
            const std::string pid_file = dir + "/pid-" + spec.task.name();
            if (attempt == 0) std::ofstream(pid_file) << getpid() << "\n";
            if (attempt == 0 && in_save && spec.task.index == kill_ps) {
                static std::string target;
                target = tfd::ps_shard_name(kill_step, kill_ps, 2);
                tf::io::detail::write_hook() = [](const std::string& path, std::uint64_t bytes) {
                    if (bytes > 0 && path.find(target) != std::string::npos) {
                        std::printf("%s: killed while writing %s\n", "ps", target.c_str());
                        std::fflush(stdout);
                        raise(SIGKILL);
                    }
                };
            }
            const std::size_t updates = training.serve(s);
            const auto restored = ckpt.restored_step();
            std::printf("recovery: %s attempt %d restored %s, served to step %zu\n", spec.task.name().c_str(), attempt,
                        restored ? ("step " + std::to_string(*restored)).c_str() : "nothing", updates);
            expect(updates == static_cast<std::size_t>(steps), "ps served to step " + std::to_string(updates));
        } else {
            training.pull();  // where the ps tasks are
            const std::int64_t start = training.step();
            expect(start % 4 == 0 && start <= steps, "resumed at step " + std::to_string(start) + ", not a committed one");
            for (std::int64_t k = start; k < steps; ++k) {
                if (attempt == 0 && me == 0 && !in_save && k == kill_step) {
                    std::ifstream in(dir + "/pid-ps:" + std::to_string(kill_ps));
                    pid_t pid = 0;
                    in >> pid;
                    expect(pid > 0, "no pid file of ps:" + std::to_string(kill_ps));
                    std::printf("recovery: killing ps:%d (pid %d) before step %lld\n", kill_ps, static_cast<int>(pid),
                                static_cast<long long>(k));
                    std::fflush(stdout);
                    ::kill(pid, SIGKILL);
                }
                training.run(s, tf::feed(x, split.xm), tf::feed(y, split.ym));
            }
            training.pull();
            if (me == 0) {
                // single-process training on the whole batch, as many steps
                tf::variable<"ref/w1", double, tf::shape<4, 8>> r1;
                tf::variable<"ref/b1", double, tf::shape<8>> rb1;
                tf::variable<"ref/w2", double, tf::shape<8, 1>> r2;
                tf::variable<"ref/b2", double, tf::shape<1>> rb2;
                init(r1, 0), init(rb1, 10), init(r2, 20), init(rb2, 30);
                auto ref_step = tf::train::adam(0.01).minimize(mlp_loss(x, y, r1, rb1, r2, rb2));
                tf::session ref;
                for (int k = 0; k < steps; ++k) ref.run(ref_step, tf::feed(x, split.xa), tf::feed(y, split.ya));
                const double worst =
                    std::max({max_rel_diff(w1, r1), max_rel_diff(b1, rb1), max_rel_diff(w2, r2), max_rel_diff(b2, rb2)});
                std::printf("recovery: kill=%s attempt %d resumed at step %lld, committed %lld, max_weight_diff=%.3g\n",
                            kill.c_str(), attempt, static_cast<long long>(start), static_cast<long long>(ckpt.committed_step()),
                            worst);
                expect(worst <= 1e-10, "weights differ from single-process training by " + std::to_string(worst));
                if (kill != "none") {
                    expect(attempt > 0, "the job was not restarted");
                    expect(start <= kill_step, "resumed at step " + std::to_string(start) + ", after the kill at " +
                                                   std::to_string(kill_step));
                    if (in_save) expect(start < kill_step, "resumed from the shard cut off mid-write");
                }
                expect(ckpt.committed_step() == steps / 4 * 4, "last commit " + std::to_string(ckpt.committed_step()));
            }
            training.finish();
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ps_recovery_test: %s\n", e.what());
        return 1;
    }
    return tfd_test::failures == 0 ? 0 : 1;
}

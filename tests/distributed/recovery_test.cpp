// Recovery from checkpoints after a task dies, run under typeflow-launch
// --restart: the MLP of ps_test (double precision, Adam), trained
// synchronously for <steps> steps on one fixed batch, checkpointed every 4
// steps, with either strategy.
//
// ps (distributed/ps_checkpoints.hpp; 2 workers, 2 ps tasks): the ps tasks
// write shards and the chief commits them. In the first attempt
// (TYPEFLOW_ATTEMPT=0) one ps dies:
//   ps:Q@K       worker 0 kills ps Q with SIGKILL before its step K
//   ps:Q@save:K  ps Q kills itself while it writes its shard of step K (K a
//                multiple of 4), after the first bytes reached the file
//   none         nobody dies
// mirrored (distributed/mirrored.hpp; 2 tasks): the chief saves the
// variables and optimizer slots with io::saver; every task restores the
// newest complete checkpoint at start. `task:R@K`: rank R kills itself with
// SIGKILL before step K in the first attempt.
//
// Every task then fails, the launcher starts the job again, and training
// resumes from the last checkpoint. Worker 0 checks that the final weights
// equal single-process training for <steps> steps on the whole batch within
// summation-order tolerance (so the restore brought back the variables,
// Adam's slots and its step counts), that it resumed at a checkpointed step
// no later than K, and, for ps:Q@save:K, before K (the shard cut off
// mid-write was never used).
//
//   recovery_test <ps | mirrored> <dir> <steps> <kill>
#include <typeflow/dist.hpp>
#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/mirrored.hpp>
#include <typeflow/distributed/parameter_server.hpp>
#include <typeflow/distributed/ps_checkpoints.hpp>
#include <typeflow/io/saver.hpp>

#include "mlp_support.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace tf = typeflow;
namespace tfd = typeflow::dist;
using tfd_test::expect;

namespace {

// single-process training on the whole batch for `steps` steps: the reference
template <class X, class Y>
tfd_test::mlp_vars<"ref/"> reference(const X& x, const Y& y, const tfd_test::batch_split& split, int steps) {
    tfd_test::mlp_vars<"ref/"> r;
    auto ref_step = tf::train::adam(0.01).minimize(r.loss(x, y));
    tf::session ref;
    for (int k = 0; k < steps; ++k) ref.run(ref_step, tf::feed(x, split.xa), tf::feed(y, split.ya));
    return r;
}

int ps_main(const std::string& dir, int steps, const std::string& kill, int attempt) {
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
        const tfd_test::mlp_vars<""> m;
        const tfd_test::batch_split split(24, workers, me);
        using placement = tfd::ps_placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>>;
        auto training = tfd::parameter_servers<placement>(t, tf::train::adam(0.01)).minimize(m.loss(x, y));
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
                const double worst = m.max_rel_diff_to(reference(x, y, split, steps));
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
        std::fprintf(stderr, "recovery_test: %s\n", e.what());
        return 1;
    }
    return tfd_test::failures == 0 ? 0 : 1;
}

using tfd_test::bits_agree;

int mirrored_main(const std::string& dir, int steps, const std::string& kill, int attempt) {
    int kill_rank = -1, kill_step = -1;
    if (kill != "none") {
        const auto at = kill.find('@');
        expect(kill.rfind("task:", 0) == 0 && at != std::string::npos, "bad kill spec " + kill);
        kill_rank = std::atoi(kill.substr(5, at - 5).c_str());
        kill_step = std::atoi(kill.substr(at + 1).c_str());
    }
    try {
        tfd::ring_collective c(tfd::cluster_spec::from_env());
        const int rank = c.rank();
        tf::placeholder<"x", double, tf::shape<tf::dyn, 4>> x;
        tf::placeholder<"y", double, tf::shape<tf::dyn, 1>> y;
        const tfd_test::mlp_vars<""> m(rank);  // the chief's values win
        const tfd_test::batch_split split(24, c.size(), rank);
        auto step = tfd::mirrored(c, tf::train::adam(0.01)).minimize(m.loss(x, y));
        tf::io::saver saver(step.apply_op());  // the variables and Adam's slots
        // every task restores the newest complete checkpoint (the chief wrote
        // it; none is written before every task has restored: a step needs all)
        std::int64_t start = 0;
        if (auto latest = tf::io::latest_checkpoint(dir)) {
            saver.restore(*latest);
            for (const auto& e : tf::io::list_checkpoints(dir))
                if (e.path == *latest) start = e.step;
        } else {
            step.broadcast_variables();
        }
        tf::session s;
        for (std::int64_t k = start; k < steps; ++k) {
            if (attempt == 0 && rank == kill_rank && k == kill_step) {
                std::printf("recovery: rank %d kills itself before step %lld\n", rank, static_cast<long long>(k));
                std::fflush(stdout);
                raise(SIGKILL);
            }
            step.run(s, tf::feed(x, split.xm), tf::feed(y, split.ym));
            if (rank == 0 && (k + 1) % 4 == 0) saver.save(dir, k + 1);
        }
        const bool same = bits_agree(c, m.w1) && bits_agree(c, m.b1) && bits_agree(c, m.w2) && bits_agree(c, m.b2);
        if (rank == 0) {
            const double worst = m.max_rel_diff_to(reference(x, y, split, steps));
            std::printf("recovery: mirrored kill=%s attempt %d resumed at step %lld, max_weight_diff=%.3g identical=%s\n",
                        kill.c_str(), attempt, static_cast<long long>(start), worst, same ? "yes" : "NO");
            expect(worst <= 1e-10, "mirrored: weights differ from single-process training by " + std::to_string(worst));
            if (kill != "none") {
                expect(attempt > 0, "mirrored: the job was not restarted");
                expect(start <= kill_step && start % 4 == 0, "mirrored: resumed at step " + std::to_string(start));
            }
        }
        expect(same, "mirrored: the tasks' weights differ");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "recovery_test: %s\n", e.what());
        return 1;
    }
    return tfd_test::failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: recovery_test <ps | mirrored> <dir> <steps> <kill>\n");
        return 2;
    }
    const std::string what = argv[1], dir = argv[2], kill = argv[4];
    const int steps = std::atoi(argv[3]);
    const char* attempt_env = std::getenv("TYPEFLOW_ATTEMPT");
    const int attempt = attempt_env ? std::atoi(attempt_env) : 0;
    if (what == "ps") return ps_main(dir, steps, kill, attempt);
    if (what == "mirrored") return mirrored_main(dir, steps, kill, attempt);
    std::fprintf(stderr, "recovery_test: unknown strategy %s\n", what.c_str());
    return 2;
}

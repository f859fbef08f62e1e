// Parameter-server training (typeflow/distributed/parameter_server.hpp), run
// under typeflow-launch with 2 to 3 workers and 2 ps tasks. Every task builds
// the same MLP (double precision, Adam), placed on the ps tasks with a
// partitioner (so each variable's rows are split over both ps tasks); the
// workers train on their rows of one global batch, and each also trains the
// same model on the whole batch in one process (its own variables) as the
// reference. Checks: after every step the reference's loss is the global
// loss the workers' losses add up to; at the end, the values a final pull
// brings equal the reference within summation-order tolerance, and the loss
// went down. Then asynchronous training of a fresh model, whose final loss
// must reach single-process training's after as many steps. Then bad input
// from worker 0: a different model, an unknown request, a negative example
// count, gradients of a step no ps has reached, or table rows out of order:
// every task fails with an error saying what was wrong (both fingerprints,
// the request, the count, the steps, the row).
//
// With `backup` or `stall` it runs only the backup-worker checks (3 workers,
// synchronous, the MLP trained for a fixed time; worker 2 stops itself with
// SIGSTOP for a while): with one backup worker, worker 0 keeps stepping while
// worker 2 is stopped (at least half its rate before; it prints the ratio,
// whose goal is 0.9); with none
// (`stall`, heartbeat timeout 1 s), every other task reports worker 2 as not
// responding within twice the heartbeat timeout instead of hanging.
//
// With `dead_async`, `dead_sync`, `silent` or `refused` it runs only the
// lost-worker checks (see lost_worker_test), under typeflow-launch --keep-going.
//
//   ps_test <global batch> <steps> [bad input: fingerprint (default) | request | examples | step | rows; or backup | stall;
//                                   or dead_async | dead_sync | silent | refused]
#include <typeflow/dist.hpp>
#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/parameter_server.hpp>

#include "mlp_support.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tf = typeflow;
namespace tfd = typeflow::dist;
using tfd_test::expect;
using tfd_test::fill_rows;
using tfd_test::init;
using tfd_test::max_rel_diff;
using tfd_test::mlp_loss;

namespace {

double seconds_now() {  // CLOCK_MONOTONIC: the same clock in every process of the machine
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Stops this whole process with SIGSTOP for about `seconds`: a child process
// sends SIGCONT, then exits (only async-signal-safe calls after the fork).
void stop_self_for(double seconds) {
    const pid_t parent = getpid();
    const pid_t child = fork();
    if (child < 0) throw std::runtime_error("fork failed");
    if (child == 0) {
        timespec ts{static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
        while (nanosleep(&ts, &ts) != 0) {
        }
        kill(parent, SIGCONT);
        _exit(0);
    }
    kill(parent, SIGSTOP);
    waitpid(child, nullptr, 0);
}

// This task's place in the cluster: a ps, or worker `me` of `workers` (ranks 0 .. workers - 1).
struct place {
    bool is_ps;
    int workers = 0, me;
    explicit place(const tfd::cluster_spec& spec) : is_ps(spec.task.type == tfd::role::ps) {
        for (int r = 0; r < spec.size(); ++r) workers += spec.task_of(r).type != tfd::role::ps;
        me = is_ps ? -1 : spec.rank();
    }
};

// The backup-worker checks (see the top of this file); `backups`: 1 or 0 (`stall`).
void backup_test(tfd::transport& t, tfd::ring_collective& comm, int batch, int backups) {
    const tfd::cluster_spec& spec = t.spec();
    const auto [is_ps, workers, me] = place(spec);
    expect(workers == 3, "the backup checks run 3 workers");
    tf::placeholder<"x", double, tf::shape<tf::dyn, 4>> x;
    tf::placeholder<"y", double, tf::shape<tf::dyn, 1>> y;
    const tfd_test::mlp_vars<""> m;
    auto loss = m.loss(x, y);
    const tfd_test::batch_split split(batch, workers, me);
    const auto &xm = split.xm, &ym = split.ym, &xa = split.xa, &ya = split.ya;
    using placement = tfd::ps_placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>>;
    auto training = tfd::parameter_servers<placement>(t, tf::train::adam(0.01)).minimize(loss);
    tf::session s;
    const double first = static_cast<double>(s.run(loss, tf::feed(x, xa), tf::feed(y, ya))[0]);
    comm.barrier();
    const double t0 = seconds_now();
    if (backups == 0) {  // stall: every task but worker 2 must fail naming it, soon after it stops
        constexpr double hb = 1.0;  // the heartbeat timeout main() set
        double last_step = t0;
        std::string what;
        try {
            if (is_ps) training.serve(s, tfd::ps_mode::sync, 0);
            else
                for (int k = 0;; ++k) {
                    if (me == 2 && k == 10) stop_self_for(4 * hb);
                    training.run(s, tf::feed(x, xm), tf::feed(y, ym));
                    last_step = seconds_now();
                }
        } catch (const tfd::error& e) {
            what = e.what();
        }
        const double waited = seconds_now() - last_step;
        if (me != 2) {
            expect(what.find("worker:2") != std::string::npos && what.find("not responding") != std::string::npos,
                   spec.task.name() + ": the stalled worker is named, not: '" + what + "'");
            expect(waited <= 2 * hb, spec.task.name() + ": the stall was reported after " + std::to_string(waited) + " s");
            std::printf("ps stall: %s reported the stopped worker after %.3f s (heartbeat timeout %.1f s): %s\n",
                        spec.task.name().c_str(), waited, hb, what.c_str());
        } else
            expect(!what.empty(), "worker 2 resumed into a healthy cluster");
        return;
    }
    // one backup worker: each step takes the first 2 of 3 pushes
    constexpr double run_for = 3.0, stop_at = 1.0, stop_for = 1.5;
    double stop_begin = 0, stop_end = 0, updates = 0;
    std::vector<double> done_at;
    if (is_ps) {
        updates = static_cast<double>(training.serve(s, tfd::ps_mode::sync, 1));
        std::printf("ps backup: %s applied %.0f updates, dropped %llu stale pushes\n", spec.task.name().c_str(), updates,
                    static_cast<unsigned long long>(training.stats().stale_pushes));
    } else {
        while (seconds_now() < t0 + run_for) {
            if (me == 2 && stop_begin == 0 && seconds_now() >= t0 + stop_at) {
                stop_begin = seconds_now();
                stop_self_for(stop_for);
                stop_end = seconds_now();
            }
            training.run(s, tf::feed(x, xm), tf::feed(y, ym));
            done_at.push_back(seconds_now());
        }
        training.pull();
        training.finish();
    }
    // worker 2's stop and ps 0's update count, to everyone
    std::vector<double> shared = {stop_begin, stop_end, spec.task.name() == "ps:0" ? updates : 0.0};
    comm.all_reduce(std::span<double>(shared));
    stop_begin = shared[0], stop_end = shared[1], updates = shared[2];
    if (me != 0) return;
    auto rate = [&](double from, double to) {
        const auto n = std::count_if(done_at.begin(), done_at.end(), [&](double d) { return d >= from && d < to; });
        return static_cast<double>(n) / (to - from);
    };
    const double before = rate(t0 + 0.2, stop_begin), during = rate(stop_begin + 0.1, stop_end);
    const double last = static_cast<double>(s.run(loss, tf::feed(x, xa), tf::feed(y, ya))[0]);
    // the same model trained in one process on the whole batch for as many updates
    const double lr = tfd_test::single_process_loss(x, y, xa, ya, static_cast<int>(updates));
    std::printf("ps backup: worker:0 steps/s %.1f with 3 workers, %.1f while worker:2 was stopped (%.2f s): ratio=%.2f; "
                "loss %.6f -> %.6f after %.0f updates (one process: %.6f)\n",
                before, during, stop_end - stop_begin, during / before, first, last, updates, lr);
    expect(stop_end - stop_begin >= stop_for - 0.1, "worker 2 was stopped for " + std::to_string(stop_end - stop_begin) + " s");
    // The goal is 0.9 (the figure is recorded in benchmarks/RESULTS-dist.md);
    // the test holds a looser bound that load from other tests cannot break,
    // and that a step waiting for the stopped worker (a rate near 0) does.
    expect(during >= 0.5 * before, "with a backup worker the step rate fell to " + std::to_string(during / before) +
                                       " of its rate while worker 2 ran");
    expect(last <= 1.1 * lr + 1e-3, "backup: final loss " + std::to_string(last) + " above the single-process " + std::to_string(lr));
}

// A worker lost while the ps tasks serve it (run with typeflow-launch
// --keep-going, 3 workers, 2 ps tasks): worker 2 dies (SIGKILL) at step 5
// right after pushing the head and the first gradient shard of its step, the
// shard all NaN, so a ps that summed it and did not drop it ends with NaN
// weights (`dead_async`, `dead_sync`: sync with one backup); or it stops
// (SIGSTOP) for three heartbeat timeouts in sync training with one backup
// (`silent`); or it pushes -1 examples in async training (`refused`). The
// other workers must finish their steps and reach single-process training's
// loss, every ps must count one lost worker, and worker 2, when it lives to
// see it, must get an error saying why.
void lost_worker_test(tfd::transport& t, int batch, int steps, const std::string& kind) {
    const tfd::cluster_spec& spec = t.spec();
    const auto [is_ps, workers, me] = place(spec);
    expect(workers == 3, "the lost-worker checks run 3 workers");
    tf::placeholder<"x", double, tf::shape<tf::dyn, 4>> x;
    tf::placeholder<"y", double, tf::shape<tf::dyn, 1>> y;
    const tfd_test::mlp_vars<""> m;
    auto loss = m.loss(x, y);
    const tfd_test::batch_split split(batch, workers, me);
    using placement = tfd::ps_placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>>;
    auto training = tfd::parameter_servers<placement>(t, tf::train::adam(0.01)).minimize(loss);
    using P = decltype(training)::placement_type;
    tf::session s;
    const bool async = kind == "dead_async" || kind == "refused";
    if (is_ps) {
        const std::size_t updates = training.serve(s, async ? tfd::ps_mode::async : tfd::ps_mode::sync, async ? 0 : 1);
        const auto st = training.stats();
        std::printf("ps lost %s: %s applied %zu updates, lost %llu worker(s)\n", kind.c_str(), spec.task.name().c_str(), updates,
                    static_cast<unsigned long long>(st.lost_workers));
        expect(st.lost_workers == 1, spec.task.name() + " lost " + std::to_string(st.lost_workers) + " workers, not 1");
        expect(updates >= static_cast<std::size_t>(steps), spec.task.name() + " applied only " + std::to_string(updates) + " updates");
        return;
    }
    constexpr double hb = 1.0;  // the heartbeat timeout main() set for `silent`
    std::string what;
    try {
        for (int k = 0; k < steps; ++k) {
            if (me == 2 && k == 5 && kind == "silent") stop_self_for(3 * hb);
            // the others wait, so worker 2's push below is of the current step and summed first
            if (me != 2 && k == 5 && kind.starts_with("dead")) std::this_thread::sleep_for(std::chrono::milliseconds(300));
            if (me == 2 && k == 5 && kind != "silent") {
                // by hand: a step's request, its whole answer, then the push head and one shard
                tfd::detail::ps_channels ch(t, 2);
                std::vector<tfd::request> rs;
                const std::int64_t req[2] = {1, static_cast<std::int64_t>(training.fingerprint)};
                std::int64_t step[2] = {0, 0};
                std::vector<std::vector<double>> values(P::shard_count);
                for (std::size_t q = 0; q < 2; ++q) ch.send(rs, ch.ps[q], tfd::op_code::pull, req, 2);
                for (std::size_t q = 0; q < 2; ++q) {
                    ch.recv(rs, ch.ps[q], tfd::op_code::pull, &step[q], 1);
                    for (std::size_t i = 0; i < P::shard_count; ++i)
                        if (P::shards[i].ps == static_cast<int>(q)) {
                            values[i].resize(P::shards[i].bytes / sizeof(double));
                            ch.recv(rs, ch.ps[q], tfd::op_code::pull, values[i].data(), values[i].size());
                        }
                }
                ch.wait_all(rs);
                std::vector<double> head[2];
                for (std::size_t q = 0; q < 2; ++q) {
                    head[q] = {kind == "refused" ? -1.0 : 8.0, 0.0, static_cast<double>(step[q])};
                    ch.send(rs, ch.ps[q], tfd::op_code::push, head[q].data(), 3);
                    if (kind == "refused") continue;
                    for (std::size_t i = 0; i < P::shard_count; ++i)
                        if (P::shards[i].ps == static_cast<int>(q)) {  // the first shard of this ps, all NaN
                            std::fill(values[i].begin(), values[i].end(), std::numeric_limits<double>::quiet_NaN());
                            ch.send(rs, ch.ps[q], tfd::op_code::push, values[i].data(), values[i].size());
                            break;
                        }
                }
                ch.wait_all(rs);
                if (kind != "refused") {
                    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the ps tasks sum the shard
                    std::fflush(stdout);
                    raise(SIGKILL);
                }
                for (int j = 0; j < 3; ++j) training.pull();  // fails once a ps has refused this worker
            }
            training.run(s, tf::feed(x, split.xm), tf::feed(y, split.ym));
        }
        training.pull();
        training.finish();
    } catch (const tfd::error& e) {
        what = e.what();
    }
    if (me == 2) {
        const std::string says = kind == "refused" ? "pushed -1.000000 examples" : "closed the connection";
        expect(what.find(says) != std::string::npos, "worker 2 is told '" + says + "', not: '" + what + "'");
        std::printf("ps lost %s: worker:2 failed with: %s\n", kind.c_str(), what.c_str());
        return;
    }
    expect(what.empty(), spec.task.name() + " failed: " + what);
    const double last = static_cast<double>(s.run(loss, tf::feed(x, split.xa), tf::feed(y, split.ya))[0]);
    const double lr = tfd_test::single_process_loss(x, y, split.xa, split.ya, steps);
    std::printf("ps lost %s: %s final loss %.6f, one process after %d steps %.6f\n", kind.c_str(), spec.task.name().c_str(), last,
                steps, lr);
    // Sync training with a backup worker sums the first 2 of 3 workers' pushes
    // each step until worker 2 dies, and which 2 depends on timing: the final
    // loss of `dead_sync` varies from run to run (0.44 to 0.58 in 40 runs,
    // against 0.500 for one process). A NaN shard summed, the failure this
    // checks, gives a NaN loss, which fails any bound.
    const double slack = kind == "dead_sync" ? 1.3 : 1.1;
    expect(last <= slack * lr + 1e-3,
           kind + ": final loss " + std::to_string(last) + " above the single-process " + std::to_string(lr));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: ps_test <global batch> <steps> [fingerprint|request|examples|step|rows|backup|stall]\n");
        return 2;
    }
    const int batch = std::atoi(argv[1]), steps = std::atoi(argv[2]);
    const std::string mode = argc > 3 ? argv[3] : "";
    try {
        tfd::cluster_spec cs = tfd::cluster_spec::from_env();
        if (mode == "stall" || mode == "silent") cs.options.heartbeat_timeout = std::chrono::milliseconds(1000);
        tfd::transport t(cs);
        if (mode == "dead_async" || mode == "dead_sync" || mode == "silent" || mode == "refused") {
            lost_worker_test(t, batch, steps, mode);
            if (tfd_test::failures == 0) std::printf("ps %s: OK\n", mode.c_str());
            return tfd_test::failures == 0 ? 0 : 1;
        }
        if (mode == "backup" || mode == "stall") {
            tfd::ring_collective comm(t);
            backup_test(t, comm, batch, mode == "backup" ? 1 : 0);
            if (tfd_test::failures == 0) std::printf("ps %s: OK\n", mode.c_str());
            return tfd_test::failures == 0 ? 0 : 1;
        }
        tfd::ring_collective comm(t);  // barriers between the phases
        const tfd::cluster_spec& spec = t.spec();
        const auto [is_ps, workers, me] = place(spec);

        tf::placeholder<"x", double, tf::shape<tf::dyn, 4>> x;
        tf::placeholder<"y", double, tf::shape<tf::dyn, 1>> y;
        tf::variable<"w1", double, tf::shape<4, 8>> w1;
        tf::variable<"b1", double, tf::shape<8>> b1;
        tf::variable<"w2", double, tf::shape<8, 1>> w2;
        tf::variable<"b2", double, tf::shape<1>> b2;
        // the ps tasks' values are the model's; a worker's start elsewhere and are replaced by its pulls
        const double salt = is_ps ? 0 : 5 + me;
        init(w1, salt), init(b1, salt + 10), init(w2, salt + 20), init(b2, salt + 30);
        auto opt = tf::train::adam(0.01);
        // a worker's rows: i = me, me + workers, ...; the whole batch for the references
        const tfd_test::batch_split split(batch, workers, me);
        const auto &mine = split.mine, &all = split.all;
        const auto &xm = split.xm, &ym = split.ym, &xa = split.xa, &ya = split.ya;
        using placement = tfd::ps_placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>>;
        auto training = tfd::parameter_servers<placement>(t, opt).minimize(mlp_loss(x, y, w1, b1, w2, b2));
        tf::session s;
        if (is_ps) {
            // backup workers out of range, or with async: refused before anything is served
            auto refusal = [&](tfd::ps_mode mode, int b) {
                try {
                    training.serve(s, mode, b);
                } catch (const tfd::error& e) {
                    return std::string(e.what());
                }
                return std::string();
            };
            const std::string too_many = refusal(tfd::ps_mode::sync, workers), with_async = refusal(tfd::ps_mode::async, 1);
            expect(too_many.find(std::to_string(workers) + " backup workers of " + std::to_string(workers) + " workers") !=
                       std::string::npos,
                   "backup workers = workers is refused, not: '" + too_many + "'");
            expect(with_async.find("backup workers need ps_mode::sync") != std::string::npos,
                   "backup workers with async are refused, not: '" + with_async + "'");
            const std::size_t updates = training.serve(s);
            expect(updates == static_cast<std::size_t>(steps), "ps served " + std::to_string(updates) + " updates, not " +
                                                                   std::to_string(steps));
            std::printf("ps %s: %zu updates\n", spec.task.name().c_str(), updates);
        } else {
            tf::tensor<double> xe({0, 4}), ye({0, 1});  // worker 1's rows in step 2
            tf::variable<"ref_w1", double, tf::shape<4, 8>> r1;
            tf::variable<"ref_b1", double, tf::shape<8>> rb1;
            tf::variable<"ref_w2", double, tf::shape<8, 1>> r2;
            tf::variable<"ref_b2", double, tf::shape<1>> rb2;
            init(r1, 0), init(rb1, 10), init(r2, 20), init(rb2, 30);
            auto ref_loss = mlp_loss(x, y, r1, rb1, r2, rb2);
            auto ref_step = opt.minimize(ref_loss);
            tf::session ref;
            double first = 0, last = 0;
            for (int k = 0; k < steps; ++k) {
                // in step 2 worker 1 has no rows (its rows go nowhere: the reference skips them too)
                const bool empty = k == 2 && me == 1;
                const double l = empty ? training.run(s, tf::feed(x, xe), tf::feed(y, ye))
                                       : training.run(s, tf::feed(x, xm), tf::feed(y, ym));
                (void)l;
                std::vector<int> used;
                for (int i = 0; i < batch; ++i)
                    if (!(k == 2 && workers > 1 && i % workers == 1)) used.push_back(i);
                tf::tensor<double> xu, yu;
                fill_rows(used, xu, yu);
                const auto [rl, done] = ref.run(tf::fetch(ref_loss, ref_step), tf::feed(x, xu), tf::feed(y, yu));
                (void)done;
                if (k == 0) first = static_cast<double>(rl[0]);
            }
            training.pull();
            // every pull brings the whole model once (49 doubles, split over the two ps tasks) and each ps's step
            expect(training.stats().bytes_received == static_cast<std::uint64_t>(steps + 1) * (49 + 2) * 8,
                   "a worker received " + std::to_string(training.stats().bytes_received) + " bytes of values");
            const auto [l_end] = ref.run(tf::fetch(ref_loss), tf::feed(x, xa), tf::feed(y, ya));
            last = static_cast<double>(l_end[0]);
            const double worst = std::max({max_rel_diff(w1, r1), max_rel_diff(b1, rb1), max_rel_diff(w2, r2), max_rel_diff(b2, rb2)});
            expect(last < first, "the loss did not go down");
            expect(worst <= 1e-10, "pulled weights differ from single-process training by " + std::to_string(worst));
            if (me == 0)
                std::printf("ps training: workers=%d ps=2 batch=%d steps=%d max_weight_diff=%.3g first_loss=%.6f final_loss=%.6f\n",
                            workers, batch, steps, worst, first, last);
            training.finish();
        }
        // asynchronous training of a fresh model: every push applied alone as it comes
        {
            tf::variable<"a/w1", double, tf::shape<4, 8>> a1;
            tf::variable<"a/b1", double, tf::shape<8>> ab1;
            tf::variable<"a/w2", double, tf::shape<8, 1>> a2;
            tf::variable<"a/b2", double, tf::shape<1>> ab2;
            init(a1, salt), init(ab1, salt + 10), init(a2, salt + 20), init(ab2, salt + 30);
            auto async_loss = mlp_loss(x, y, a1, ab1, a2, ab2);
            auto async_training = tfd::parameter_servers<placement>(t, opt).minimize(async_loss);
            if (is_ps) {
                const std::size_t updates = async_training.serve(s, tfd::ps_mode::async);
                expect(updates == static_cast<std::size_t>(steps * workers),
                       "async: ps applied " + std::to_string(updates) + " updates, not one per push");
            } else {
                for (int k = 0; k < steps; ++k) async_training.run(s, tf::feed(x, xm), tf::feed(y, ym));
                async_training.pull();
                const double l = static_cast<double>(s.run(async_loss, tf::feed(x, xa), tf::feed(y, ya))[0]);
                // the same model trained in one process for as many steps on the whole batch
                const double lr = tfd_test::single_process_loss(x, y, xa, ya, steps);
                expect(l <= 1.05 * lr, "async: final loss " + std::to_string(l) + " above the single-process " + std::to_string(lr));
                if (me == 0) std::printf("ps async: workers=%d steps=%d final_loss=%.6f single_process=%.6f\n", workers, steps, l, lr);
                async_training.finish();
            }
        }
        // an embedding table: its gradient is sparse, so only the rows a step's
        // ids touch move, both ways; the result equals single-process training
        // (whose Adam updates the table lazily too: only the rows present)
        {
            tf::placeholder<"ids", std::int32_t, tf::shape<tf::dyn>> ids;
            tf::variable<"e/table", double, tf::shape<64, 4>> table;
            tf::variable<"e/w", double, tf::shape<4, 1>> ew;
            tf::variable<"e/b", double, tf::shape<1>> eb;
            init(table, salt), init(ew, salt + 10), init(eb, salt + 20);
            auto emb_loss = [&](const auto& t, const auto& w, const auto& b) {
                return tf::mean(tf::square(tf::matmul(tf::tanh(tf::embedding_lookup(t, ids) + x), w) + b - y));
            };
            auto sparse_training = tfd::parameter_servers<placement>(t, opt).minimize(emb_loss(table, ew, eb));
            // row i's id: (7 i) mod 20, so rows 20..63 are never touched and ids repeat
            auto ids_of = [](const std::vector<int>& rows) {
                tf::tensor<std::int32_t> v({static_cast<tf::index_t>(rows.size())});
                for (std::size_t r = 0; r < rows.size(); ++r) v[static_cast<tf::index_t>(r)] = (7 * rows[r]) % 20;
                return v;
            };
            if (is_ps) {
                const std::size_t updates = sparse_training.serve(s);
                expect(updates == static_cast<std::size_t>(steps), "sparse: ps served " + std::to_string(updates) + " updates");
            } else {
                const tf::tensor<std::int32_t> im = ids_of(mine), ia = ids_of(all);
                // an id outside the table: an error naming it, before anything is sent (the bytes below stay exact)
                tf::tensor<std::int32_t> bad_ids = ids_of(mine);  // its own buffer (a copy of im would share im's)
                bad_ids[0] = 64;
                std::string what;
                try {
                    sparse_training.run(s, tf::feed(x, xm), tf::feed(y, ym), tf::feed(ids, bad_ids));
                } catch (const tfd::error& e) {
                    what = e.what();
                }
                expect(what.find("index 64 of e/table outside [0, 64)") != std::string::npos,
                       "sparse: an id outside the table is refused, not: '" + what + "'");
                for (int k = 0; k < steps; ++k) sparse_training.run(s, tf::feed(x, xm), tf::feed(y, ym), tf::feed(ids, im));
                const std::uint64_t step_bytes = sparse_training.stats().bytes_received;
                // this worker's distinct rows, counted here: each step pulls those rows
                // (4 doubles each), w and b (5 doubles) and each ps's step (2 x 8 bytes)
                std::vector<int> distinct;
                for (tf::index_t r = 0; r < im.size(); ++r) distinct.push_back(im[r]);
                std::sort(distinct.begin(), distinct.end());
                distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
                const std::uint64_t want = static_cast<std::uint64_t>(steps) * ((distinct.size() * 4 + 5) * 8 + 2 * 8);
                expect(step_bytes == want, "sparse: a worker received " + std::to_string(step_bytes) + " bytes in its steps, not " +
                                               std::to_string(want) + " (" + std::to_string(distinct.size()) + " rows a step)");
                sparse_training.pull();  // every row
                expect(sparse_training.stats().bytes_received - step_bytes == (64 * 4 + 5) * 8 + 2 * 8,
                       "sparse: a final pull brings the whole table");
                tf::variable<"eref/table", double, tf::shape<64, 4>> rt;
                tf::variable<"eref/w", double, tf::shape<4, 1>> rw;
                tf::variable<"eref/b", double, tf::shape<1>> rb;
                init(rt, 0), init(rw, 10), init(rb, 20);
                auto ref_loss = emb_loss(rt, rw, rb);
                auto ref_step = opt.minimize(ref_loss);
                tf::session ref;
                const double first = static_cast<double>(ref.run(ref_loss, tf::feed(x, xa), tf::feed(y, ya), tf::feed(ids, ia))[0]);
                for (int k = 0; k < steps; ++k) ref.run(ref_step, tf::feed(x, xa), tf::feed(y, ya), tf::feed(ids, ia));
                const double last = static_cast<double>(ref.run(ref_loss, tf::feed(x, xa), tf::feed(y, ya), tf::feed(ids, ia))[0]);
                const double worst = std::max({max_rel_diff(table, rt), max_rel_diff(ew, rw), max_rel_diff(eb, rb)});
                expect(last < first, "sparse: the loss did not go down");
                expect(worst <= 1e-10, "sparse: pulled weights differ from single-process training by " + std::to_string(worst));
                double untouched = 0;  // rows 20..63: never updated, still the initial values
                for (tf::index_t i = 20 * 4; i < 64 * 4; ++i)
                    untouched = std::max(untouched, std::fabs(table.value()[i] - 0.4 * std::sin(1.7 * static_cast<double>(i) + 0.3)));
                expect(untouched == 0, "sparse: an untouched row changed");
                if (me == 0)
                    std::printf("ps sparse: workers=%d rows/step=%zu of 64 bytes/step=%llu (dense: %d) max_weight_diff=%.3g loss %.6f -> %.6f\n",
                                workers, distinct.size(), static_cast<unsigned long long>(step_bytes / steps),
                                (64 * 4 + 5) * 8 + 2 * 8, worst, first, last);
                sparse_training.finish();
            }
            // the same table trained asynchronously (each worker's rows applied alone)
            tf::variable<"ea/table", double, tf::shape<64, 4>> at;
            tf::variable<"ea/w", double, tf::shape<4, 1>> aw;
            tf::variable<"ea/b", double, tf::shape<1>> ab;
            init(at, salt), init(aw, salt + 10), init(ab, salt + 20);
            auto async_sparse = tfd::parameter_servers<placement>(t, opt).minimize(emb_loss(at, aw, ab));
            if (is_ps) {
                const std::size_t updates = async_sparse.serve(s, tfd::ps_mode::async);
                expect(updates == static_cast<std::size_t>(steps * workers), "sparse async: " + std::to_string(updates) + " updates");
            } else {
                const tf::tensor<std::int32_t> im = ids_of(mine), ia = ids_of(all);
                // the loss at the values the ps tasks start from (set here, not pulled: another
                // worker may already have trained by the time this one would pull)
                init(at, 0), init(aw, 10), init(ab, 20);
                const double first = static_cast<double>(s.run(emb_loss(at, aw, ab), tf::feed(x, xa), tf::feed(y, ya), tf::feed(ids, ia))[0]);
                for (int k = 0; k < steps; ++k) async_sparse.run(s, tf::feed(x, xm), tf::feed(y, ym), tf::feed(ids, im));
                async_sparse.pull();
                const double last = static_cast<double>(s.run(emb_loss(at, aw, ab), tf::feed(x, xa), tf::feed(y, ya), tf::feed(ids, ia))[0]);
                expect(last < first, "sparse async: loss " + std::to_string(first) + " -> " + std::to_string(last));
                if (me == 0) std::printf("ps sparse async: workers=%d loss %.6f -> %.6f\n", workers, first, last);
                async_sparse.finish();
            }
        }
        // bad input from worker 0, which fails the cluster (so it comes last and
        // one kind a run): every task gets an error naming what was wrong
        comm.barrier();  // every ps has left the asynchronous phase
        {
            tf::variable<"w1", double, tf::shape<4, 8>> v1;
            tf::variable<"b1", double, tf::shape<8>> c1;
            tf::variable<"w2", double, tf::shape<8, 2>> v2;
            tf::variable<"b2", double, tf::shape<1>> c2;
            auto bad_loss = tf::mean(tf::matmul(tf::tanh(tf::matmul(x, v1) + c1), v2)) + tf::sum(c2);
            auto bad = tfd::parameter_servers<placement>(t, opt).minimize(bad_loss);
            // a model with an embedding table, for row ids out of order
            tf::placeholder<"ids", std::int32_t, tf::shape<tf::dyn>> ids;
            tf::variable<"r/table", double, tf::shape<64, 4>> table;
            auto rows_model =
                tfd::parameter_servers<placement>(t, opt).minimize(tf::mean(tf::square(tf::embedding_lookup(table, ids))));
            // what worker 0 sends, and what every task's error must say
            const std::string kind = argc > 3 ? argv[3] : "fingerprint";
            const std::string says = kind == "request" ? "sent an unknown request 7"
                                     : kind == "examples" ? "pushed -1.000000 examples"
                                     : kind == "step"     ? "pushed gradients of step 5.000000, this ps (ps:"
                                     : kind == "rows"     ? ", not increasing or outside its shard ["
                                                          : "runs a different model: fingerprint";
            std::string what;
            try {
                if (is_ps && kind == "rows") rows_model.serve(s);
                else if (is_ps) training.serve(s);
                else if (me != 0 && kind == "rows")
                    for (int k = 0; k < 3; ++k) rows_model.pull();
                else if (me != 0)
                    for (int k = 0; k < 3; ++k) training.pull();  // a refusal may come a round later
                else if (kind == "fingerprint") bad.pull();  // a model with w2 of 2 outputs
                else if (kind == "rows") {
                    // a step asking each ps for rows 7 and 5 of its table shard: not increasing
                    tfd::detail::ps_channels ch(t, 2);
                    std::vector<tfd::request> rs;
                    const std::int64_t req[3] = {1, static_cast<std::int64_t>(rows_model.fingerprint), 2};
                    const std::int64_t rows[2][2] = {{7, 5}, {39, 37}};
                    for (int p : ch.ps) {
                        ch.send(rs, p, tfd::op_code::pull, req, 3);
                        // the shard of rows [32, 64) gets 39, 37; the other 7, 5
                        const int which = tfd::placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>,
                                                         decltype(table)>::ps_of<decltype(table)>(1) == p - ch.ps[0];
                        ch.send(rs, p, tfd::op_code::pull, rows[which], 2);
                    }
                    ch.wait_all(rs);
                    for (int k = 0; k < 3; ++k) rows_model.pull();
                }
                else {
                    tfd::detail::ps_channels ch(t, 2);
                    std::vector<tfd::request> rs;
                    const std::int64_t req[2] = {kind == "request" ? 7 : 1, static_cast<std::int64_t>(training.fingerprint)};
                    // a step's push head claiming -1 examples, or gradients of a step no ps has reached
                    const double head[3] = {kind == "step" ? 1.0 : -1.0, 0, kind == "step" ? 5.0 : 0.0};
                    for (int p : ch.ps) {
                        ch.send(rs, p, tfd::op_code::pull, req, 2);
                        if (kind != "request") ch.send(rs, p, tfd::op_code::push, head, 3);
                    }
                    ch.wait_all(rs);
                    for (int k = 0; k < 3; ++k) training.pull();  // fails once a ps has refused
                }
            } catch (const tfd::error& e) {
                what = e.what();
            }
            expect(what.find(says) != std::string::npos,
                   "bad input (" + kind + ") fails every task with an error saying '" + says + "', not: '" + what + "'");
            (void)bad;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ps_test: %s\n", e.what());
        return 1;
    }
    if (tfd_test::failures == 0) std::printf("ps: OK\n");
    return tfd_test::failures == 0 ? 0 : 1;
}

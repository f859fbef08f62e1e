#pragma once
// typeflow::dist::ps_checkpoints — checkpoints of parameter-server training,
// written in shards by the ps tasks and committed by the chief (TensorFlow's
// MonitoredTrainingSession with a checkpoint saver, whose Saver writes one
// shard per ps), so that a job restarted after a task died resumes from the
// last checkpoint every ps finished writing.
//
//     auto training = tfd::parameter_servers<placement>(t, opt).minimize(loss);
//     tfd::ps_checkpoints ckpt(training, {.dir = "/shared/run1", .every = 100});
//     if (ps) training.serve(s);          // restores the last committed checkpoint first
//     else {
//         training.pull();                // where the ps tasks are: 0, or the restored step
//         for (auto k = training.step(); k < steps; ++k) training.run(s, ...);
//         training.finish();
//     }
//
// Files in `dir` (which every task must reach: one machine, or a shared file
// system), each written atomically (a temporary file renamed into place):
//   ps-<step>.shard-<q>-of-<Q>.tfckpt  ps q's variables and optimizer slots
//                                      after update <step>
//   ps-<step>.commit                   written by the chief once every shard
//                                      of <step> is complete: only a
//                                      committed step is ever restored
// Include it after <typeflow/typeflow.hpp> and <typeflow/dist.hpp>; it needs
// the io component (typeflow/io/saver.hpp).

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <typeflow/distributed/parameter_server.hpp>
#include <typeflow/io/file.hpp>
#include <typeflow/io/saver.hpp>

namespace typeflow::dist {

/// Where and how often parameter-server training is checkpointed.
struct ps_checkpoint_options {
    /// A directory every task can reach (created if missing).
    std::string dir;
    /// A ps writes its shard after every `every` updates.
    std::int64_t every = 100;
    /// Committed checkpoints kept; older ones are deleted with their shards.
    int keep = 3;
};

/// The file names of checkpoint `step` of a job with `num_ps` ps tasks.
inline std::string ps_shard_name(std::int64_t step, int q, int num_ps) {
    return "ps-" + std::to_string(step) + ".shard-" + std::to_string(q) + "-of-" + std::to_string(num_ps) + ".tfckpt";
}
inline std::string ps_commit_name(std::int64_t step) { return "ps-" + std::to_string(step) + ".commit"; }

namespace detail {
// "ps-<step>.<rest>" -> step, when the name has that form and <rest> starts with `rest_prefix`
inline std::optional<std::int64_t> ps_file_step(const std::string& name, const std::string& rest_prefix) {
    if (name.rfind("ps-", 0) != 0) return std::nullopt;
    std::size_t i = 3;
    std::int64_t step = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 3 + 18) step = step * 10 + (name[i++] - '0');
    if (i == 3 || i >= name.size() || name[i] != '.' || name.compare(i + 1, rest_prefix.size(), rest_prefix) != 0)
        return std::nullopt;
    return step;
}
// the steps of the files "ps-<step>.<rest_prefix>..." in dir, newest first
inline std::vector<std::int64_t> ps_file_steps(const std::string& dir, const std::string& rest_prefix) {
    std::vector<std::int64_t> out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (auto k = ps_file_step(it->path().filename().string(), rest_prefix)) out.push_back(*k);
    std::sort(out.rbegin(), out.rend());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}
// file `name` in dir reads back as a complete checkpoint
inline bool complete_file(const std::string& dir, const std::string& name) {
    try {
        return io::is_complete_checkpoint(dir + "/" + name);
    } catch (const typeflow::error&) {
        return false;
    }
}
}  // namespace detail

/// Throws a dist::error naming the field when `o` cannot be followed: no
/// directory, `every` or `keep` below 1.
inline void check_options(const ps_checkpoint_options& o) {
    if (o.dir.empty()) throw error("ps_checkpoints: no directory given");
    if (o.every < 1) throw error("ps_checkpoints: every = " + std::to_string(o.every) + ", must be at least 1");
    if (o.keep < 1) throw error("ps_checkpoints: keep = " + std::to_string(o.keep) + ", must be at least 1");
}

/// True when `dir` holds commit `step` for `num_ps` ps tasks: the commit file
/// reads back whole and names this step and every shard, and every shard is
/// a complete checkpoint file.
inline bool ps_checkpoint_committed(const std::string& dir, std::int64_t step, int num_ps) {
    std::ifstream in(dir + "/" + ps_commit_name(step));
    std::string magic, word, end;
    std::int64_t k = -1;
    int n = -1;
    if (!(in >> magic >> word >> k) || magic != "typeflow-ps-commit" || word != "step" || k != step) return false;
    if (!(in >> word >> n) || word != "shards" || n != num_ps) return false;
    for (int q = 0; q < num_ps; ++q) {
        std::string shard;
        if (!(in >> shard) || shard != ps_shard_name(step, q, num_ps) || !detail::complete_file(dir, shard)) return false;
    }
    return static_cast<bool>(in >> end) && end == "end";
}

/// The newest committed checkpoint in `dir` (see ps_checkpoint_committed): its step, if any.
inline std::optional<std::int64_t> latest_ps_checkpoint(const std::string& dir, int num_ps) {
    for (std::int64_t k : detail::ps_file_steps(dir, "commit"))
        if (ps_checkpoint_committed(dir, k, num_ps)) return k;
    return std::nullopt;
}

/// Checkpoints of a ps_training object (see the top of this header). Build it
/// on every task, before serve() or the first run(), and keep it alive while
/// training runs: it installs the training's hooks.
/// - ps task q: serve() first restores the newest committed checkpoint, if
///   any, and counts steps from its step; after every `every`-th update it
///   writes its shard (its variables and optimizer slots; other ps tasks'
///   rows of a partitioned variable are saved too, but never read back).
/// - chief (the first worker): after each pull or step it commits the newest
///   multiple of `every` the ps tasks have reached once each of its shards is
///   complete, then deletes commits beyond `keep` and shards older than the
///   oldest commit kept.
/// - other workers: nothing.
template <class Training>
class ps_checkpoints {
public:
    ps_checkpoints(Training& training, ps_checkpoint_options o) : training_(&training), opt_(std::move(o)) {
        check_options(opt_);
        const transport& t = *training.channels().t;
        const cluster_spec& spec = t.spec();
        num_ps_ = static_cast<int>(training.channels().ps.size());
        std::filesystem::create_directories(opt_.dir);
        ps_hooks h;
        if (spec.task.type == role::ps) {
            q_ = static_cast<int>(std::find(training.channels().ps.begin(), training.channels().ps.end(), t.rank()) -
                                  training.channels().ps.begin());
            saver_ = io::saver(training.apply_op());
            h.on_serve = [this](session&) -> std::int64_t {
                restored_ = latest_ps_checkpoint(opt_.dir, num_ps_);
                if (!restored_) return 0;
                saver_.restore(opt_.dir + "/" + ps_shard_name(*restored_, q_, num_ps_));
                return *restored_;
            };
            h.on_update = [this](session&, std::int64_t step) {
                if (step % opt_.every == 0) saver_.write(opt_.dir + "/" + ps_shard_name(step, q_, num_ps_));
            };
        } else if (t.rank() == training.channels().workers.front()) {
            if (auto k = latest_ps_checkpoint(opt_.dir, num_ps_)) committed_ = *k;
            h.on_values = [this] { commit(training_->step()); };
        }
        training.set_hooks(std::move(h));
    }
    ps_checkpoints(const ps_checkpoints&) = delete;
    ps_checkpoints& operator=(const ps_checkpoints&) = delete;

    /// ps: the step of the checkpoint serve() restored, if it restored one.
    std::optional<std::int64_t> restored_step() const { return restored_; }
    /// chief: the newest step committed (by this chief or found at start), 0 if none.
    std::int64_t committed_step() const noexcept { return committed_; }

private:
    // chief: commits the newest multiple of `every` up to `step` whose shards are all written
    void commit(std::int64_t step) {
        const std::int64_t k = step / opt_.every * opt_.every;
        if (k <= committed_) return;
        std::vector<std::string> shards;
        for (int q = 0; q < num_ps_; ++q) {
            shards.push_back(ps_shard_name(k, q, num_ps_));
            if (!detail::complete_file(opt_.dir, shards.back())) return;  // not yet: try again later
        }
        {
            io::atomic_file f(opt_.dir + "/" + ps_commit_name(k));
            f.stream() << "typeflow-ps-commit\nstep " << k << "\nshards " << num_ps_ << "\n";
            for (const auto& sh : shards) f.stream() << sh << "\n";
            f.stream() << "end\n";
            f.commit();
        }
        committed_ = k;
        prune();
    }
    // chief: commits beyond `keep`, and shards older than the oldest commit kept
    void prune() {
        const auto commits = detail::ps_file_steps(opt_.dir, "commit");
        if (commits.size() <= static_cast<std::size_t>(opt_.keep)) return;
        const std::int64_t oldest_kept = commits[static_cast<std::size_t>(opt_.keep) - 1];
        std::error_code ec;
        for (std::int64_t k : commits)
            if (k < oldest_kept) std::filesystem::remove(opt_.dir + "/" + ps_commit_name(k), ec);
        for (std::int64_t k : detail::ps_file_steps(opt_.dir, "shard-"))
            if (k < oldest_kept)
                for (int q = 0; q < num_ps_; ++q) std::filesystem::remove(opt_.dir + "/" + ps_shard_name(k, q, num_ps_), ec);
    }

    Training* training_;
    ps_checkpoint_options opt_;
    int num_ps_ = 0, q_ = -1;
    io::saver saver_;
    std::optional<std::int64_t> restored_;
    std::int64_t committed_ = 0;
};

}  // namespace typeflow::dist

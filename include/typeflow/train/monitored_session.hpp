// typeflow/train/monitored_session.hpp — TensorFlow's MonitoredTrainingSession:
// a session that restores the latest checkpoint when it starts, saves every N
// steps and/or T seconds and when it is closed cleanly, and runs hooks
// (logging, stop at a step, a NaN/Inf guard, summaries).
//
//   tf::train::monitored_session ms({.checkpoint_dir = "ckpt", .save_every_steps = 100},
//                                   tf::io::saver(train), step,
//                                   tf::train::stop_at_step_hook(1000), tf::train::nan_guard_hook());
//   while (!ms.should_stop()) ms.run(tf::train::fetch_names{"loss", "train"}, tf::fetch(loss, train), feeds...);
//   ms.close();   // saves the final step
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/io/saver.hpp>
#include <typeflow/io/summary.hpp>
#include <typeflow/runtime/session.hpp>

namespace typeflow::train {

/// A named, read-only view of a tensor (a fetched value or a variable).
struct tensor_ref {
    std::string name;
    typeflow::dtype dtype = typeflow::dtype::float32;
    typeflow::dims shape{};
    const void* data = nullptr;
    index_t size() const noexcept { return shape.numel(); }
    /// Element i converted to double.
    double at(index_t i) const {
        switch (dtype) {
            case dtype::float32: return static_cast<const float*>(data)[i];
            case dtype::float64: return static_cast<const double*>(data)[i];
            case dtype::int32: return static_cast<const std::int32_t*>(data)[i];
            case dtype::int64: return static_cast<double>(static_cast<const std::int64_t*>(data)[i]);
            case dtype::boolean: return static_cast<const bool*>(data)[i] ? 1.0 : 0.0;
        }
        return 0;
    }
};

/// Names of the fetched values, as hooks see them ("fetch:<i>" otherwise).
/// The logging and summary hooks report only named values.
struct fetch_names {
    std::vector<std::string> names;
    fetch_names() = default;
    fetch_names(std::initializer_list<std::string> n) : names(n) {}
};

/// True for a fetched value the caller named (see fetch_names).
inline bool named(const tensor_ref& t) { return !t.name.empty() && t.name.rfind("fetch:", 0) != 0; }

/// What a hook sees: the global step, the fetched values of the last run
/// (empty in begin and end) and the saver's variables.
struct hook_context {
    std::int64_t step = 0;
    const std::vector<tensor_ref>& fetched;
    const io::saver& variables;
    bool stop = false;
    /// Asks the session to stop: should_stop() becomes true.
    void request_stop() noexcept { stop = true; }
};

/// A hook: called when the session starts (after the restore), after every
/// run, and when it is closed cleanly. A hook that throws stops the session
/// with that error (no checkpoint is written afterwards).
class session_hook {
public:
    virtual ~session_hook() = default;
    virtual void begin(hook_context&) {}
    virtual void after_run(hook_context&) {}
    virtual void end(hook_context&) {}
};

/// Logs the global step, each scalar fetched value and the steps per second,
/// every `every_n` steps.
class logging_hook : public session_hook {
public:
    explicit logging_hook(std::int64_t every_n, std::ostream& os = std::clog) : every_(every_n), os_(&os) {}
    void begin(hook_context& c) override {
        last_step_ = c.step;
        last_time_ = clock::now();
    }
    void after_run(hook_context& c) override {
        if (every_ <= 0 || c.step % every_ != 0) return;
        const auto now = clock::now();
        const double secs = std::chrono::duration<double>(now - last_time_).count();
        *os_ << "step " << c.step;
        for (const auto& t : c.fetched)
            if (t.size() == 1 && named(t)) *os_ << ", " << t.name << " = " << t.at(0);
        if (secs > 0) *os_ << " (" << static_cast<double>(c.step - last_step_) / secs << " steps/s)";
        *os_ << '\n';
        last_step_ = c.step;
        last_time_ = now;
    }

private:
    using clock = std::chrono::steady_clock;
    std::int64_t every_;
    std::ostream* os_;
    std::int64_t last_step_ = 0;
    clock::time_point last_time_{};
};

/// Requests a stop once the global step reaches `last_step` (at once if a
/// restored checkpoint is already there).
class stop_at_step_hook : public session_hook {
public:
    explicit stop_at_step_hook(std::int64_t last_step) : last_(last_step) {}
    void begin(hook_context& c) override {
        if (c.step >= last_) c.request_stop();
    }
    void after_run(hook_context& c) override {
        if (c.step >= last_) c.request_stop();
    }

private:
    std::int64_t last_;
};

/// Stops training with a tf::error naming the step and the tensor when a
/// fetched value (or, with check_variables, a floating-point variable) holds
/// a NaN or an infinity.
class nan_guard_hook : public session_hook {
public:
    explicit nan_guard_hook(bool check_variables = true) : variables_(check_variables) {}
    void after_run(hook_context& c) override {
        for (const auto& t : c.fetched) check(c.step, "fetched tensor", t);
        if (variables_)
            for (const auto& s : c.variables.tensors()) check(c.step, "variable", {s.name, s.dtype, s.shape, s.data});
    }

private:
    static void check(std::int64_t step, const char* what, const tensor_ref& t) {
        if (t.dtype != dtype::float32 && t.dtype != dtype::float64) return;
        for (index_t i = 0; i < t.size(); ++i) {
            const double v = t.at(i);
            if (!std::isfinite(v))
                throw error("nan_guard: step " + std::to_string(step) + ": " + what + " '" + t.name + "' has " +
                            (std::isnan(v) ? "NaN" : "Inf") + " at element " + std::to_string(i) + " of " +
                            to_string(t.shape));
        }
    }
    bool variables_;
};

/// Writes every scalar fetched value as a summary (tag = its fetch name), and
/// histograms of the saver's floating-point variables, every `every_n` steps.
class summary_hook : public session_hook {
public:
    summary_hook(io::summary_writer& w, std::int64_t every_n, bool histograms = true)
        : w_(&w), every_(every_n), histograms_(histograms) {}
    void after_run(hook_context& c) override {
        if (every_ <= 0 || c.step % every_ != 0) return;
        for (const auto& t : c.fetched)
            if (t.size() == 1 && t.dtype != dtype::boolean && named(t)) w_->scalar(t.name, t.at(0), c.step);
        if (histograms_)
            for (const auto& s : c.variables.tensors()) {
                if (s.dtype != dtype::float32 && s.dtype != dtype::float64) continue;
                const tensor_ref r{s.name, s.dtype, s.shape, s.data};
                std::vector<double> v(static_cast<std::size_t>(r.size()));
                for (index_t i = 0; i < r.size(); ++i) v[static_cast<std::size_t>(i)] = r.at(i);
                w_->histogram(s.name, v, c.step);
            }
        w_->flush();
    }
    void end(hook_context&) override { w_->flush(); }

private:
    io::summary_writer* w_;
    std::int64_t every_;
    bool histograms_;
};

/// When and where a monitored_session saves checkpoints.
struct monitored_session_options {
    std::string checkpoint_dir;          ///< empty: no restore and no checkpoints
    std::int64_t save_every_steps = 0;   ///< 0: not by step count
    double save_every_seconds = 0;       ///< 0: not by time
    bool save_at_end = true;             ///< save when closed cleanly
    io::restore_options restore{};       ///< how the checkpoint found at start is restored
};

/// A session for training jobs that may die: see the file comment.
class monitored_session {
public:
    /// Restores the latest checkpoint of options.checkpoint_dir (if any) into
    /// the saver's variables, then calls every hook's begin. `global_step` is
    /// the integer scalar variable the train op increments (added to the saver
    /// if it is not there).
    template <variable_c Step, class... Hooks>
        requires((std::is_base_of_v<session_hook, meta::remove_cvref_t<Hooks>> && ...))
    monitored_session(monitored_session_options o, io::saver s, const Step& global_step, Hooks&&... hooks)
        : opt_(std::move(o)), saver_(std::move(s)), uncaught_(std::uncaught_exceptions()) {
        static_assert(std::is_integral_v<value_type_t<Step>> && shape_t<Step>::rank == 0,
                      "typeflow: monitored_session: the global step must be an integer scalar variable");
        if (!saver_.contains(std::string(Step::name()))) saver_.add(global_step);
        read_step_ = [g = global_step] { return static_cast<std::int64_t>(g.value()[0]); };
        (hooks_.push_back(std::unique_ptr<session_hook>(new meta::remove_cvref_t<Hooks>(std::forward<Hooks>(hooks)))), ...);
        if (!opt_.checkpoint_dir.empty()) {
            if (auto last = io::latest_checkpoint(opt_.checkpoint_dir)) {
                saver_.restore(*last, opt_.restore);
                restored_from_ = *last;
            }
        }
        last_saved_step_ = restored_from_ ? step() : std::optional<std::int64_t>{};
        last_save_time_ = clock::now();
        call([](session_hook& h, hook_context& c) { h.begin(c); }, {});
    }
    monitored_session(const monitored_session&) = delete;
    monitored_session& operator=(const monitored_session&) = delete;
    /// Closes (and saves) unless an exception is unwinding or a run failed.
    ~monitored_session() {
        if (!closed_ && !failed_ && std::uncaught_exceptions() == uncaught_) {
            try {
                close();
            } catch (...) {
            }
        }
    }

    /// The global step now.
    std::int64_t step() const { return read_step_(); }
    /// True once a hook requested a stop, after close(), or after a failed run.
    bool should_stop() const noexcept { return stop_ || closed_ || failed_; }
    /// The checkpoint restored at start, if any.
    const std::optional<std::string>& restored_from() const noexcept { return restored_from_; }
    /// The saver (its variables are what checkpoints hold).
    const io::saver& saver() const noexcept { return saver_; }
    /// The underlying session.
    typeflow::session& raw_session() noexcept { return session_; }

    /// Runs the fetches like session::run, then the hooks, then saves if a
    /// checkpoint is due. A hook's error (e.g. the NaN guard's) propagates and
    /// marks the session failed: it will not save again.
    template <class... Fs, class... Feeds>
    std::tuple<tensor<value_type_t<Fs>>...> run(const fetch_list<Fs...>& f, const Feeds&... feeds) {
        return run(fetch_names{}, f, feeds...);
    }
    /// The same, naming the fetched values for the hooks.
    template <class... Fs, class... Feeds>
    std::tuple<tensor<value_type_t<Fs>>...> run(const fetch_names& names, const fetch_list<Fs...>& f,
                                                const Feeds&... feeds) {
        if (closed_) throw error("monitored_session: run after close()");
        if (failed_) throw error("monitored_session: run after a failed run");
        try {
            auto out = session_.run(f, feeds...);
            std::vector<tensor_ref> fetched;
            std::size_t i = 0;
            std::apply(
                [&](const auto&... t) {
                    ((fetched.push_back({i < names.names.size() ? names.names[i] : "fetch:" + std::to_string(i),
                                         t.dtype(), t.dims(), t.data()}),
                      ++i),
                     ...);
                },
                out);
            call([](session_hook& h, hook_context& c) { h.after_run(c); }, fetched);
            maybe_save();
            return out;
        } catch (...) {
            failed_ = true;
            throw;
        }
    }

    /// Saves a checkpoint of the current step now; returns its path.
    std::string save() {
        if (opt_.checkpoint_dir.empty()) throw error("monitored_session: save() without a checkpoint_dir");
        auto p = saver_.save(opt_.checkpoint_dir, step());
        last_saved_step_ = step();
        last_save_time_ = clock::now();
        return p;
    }

    /// Ends the session cleanly: calls the hooks' end and saves the final step
    /// (unless it was just saved).
    void close() {
        if (closed_) return;
        closed_ = true;
        if (failed_) return;
        call([](session_hook& h, hook_context& c) { h.end(c); }, {});
        if (opt_.save_at_end && !opt_.checkpoint_dir.empty() && last_saved_step_ != step()) save();
    }

private:
    using clock = std::chrono::steady_clock;
    template <class F>
    void call(F f, const std::vector<tensor_ref>& fetched) {
        hook_context c{step(), fetched, saver_};
        for (auto& h : hooks_) f(*h, c);
        if (c.stop) stop_ = true;
    }
    void maybe_save() {
        if (opt_.checkpoint_dir.empty()) return;
        const std::int64_t s = step();
        if (last_saved_step_ == s) return;
        const bool by_steps = opt_.save_every_steps > 0 && s % opt_.save_every_steps == 0;
        const bool by_time = opt_.save_every_seconds > 0 &&
                             std::chrono::duration<double>(clock::now() - last_save_time_).count() >= opt_.save_every_seconds;
        if (by_steps || by_time) save();
    }

    monitored_session_options opt_;
    io::saver saver_;
    typeflow::session session_;
    std::function<std::int64_t()> read_step_;
    std::vector<std::unique_ptr<session_hook>> hooks_;
    std::optional<std::string> restored_from_;
    std::optional<std::int64_t> last_saved_step_;
    clock::time_point last_save_time_{};
    int uncaught_ = 0;
    bool stop_ = false, closed_ = false, failed_ = false;
};

}  // namespace typeflow::train

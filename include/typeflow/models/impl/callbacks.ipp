// typeflow/models/impl/callbacks.ipp — the Keras callbacks' plain code (see models/callbacks.hpp):
// inline in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION (typeflow/models/src.hpp).
#pragma once
#include <chrono>
#include <cmath>
#include <fstream>

#include <unistd.h>

#include <typeflow/models/callbacks.hpp>

namespace typeflow::models {

TYPEFLOW_DECL void logs::set(const std::string& name, double v) {
    for (auto& [k, x] : items_)
        if (k == name) {
            x = v;
            return;
        }
    items_.emplace_back(name, v);
}
TYPEFLOW_DECL const double* logs::find(const std::string& name) const {
    for (auto& [k, x] : items_)
        if (k == name) return &x;
    return nullptr;
}
TYPEFLOW_DECL double logs::at(const std::string& name) const {
    if (const double* v = find(name)) return *v;
    throw typeflow::error("logs: no value named '" + name + "'");
}

TYPEFLOW_DECL std::shared_ptr<callback> tensorboard(std::string logdir) {
    return std::make_shared<tensorboard_callback>(std::move(logdir));
}
TYPEFLOW_DECL std::shared_ptr<model_checkpoint_callback> model_checkpoint(std::string dir, model_checkpoint_options o) {
    return std::make_shared<model_checkpoint_callback>(std::move(dir), std::move(o));
}
TYPEFLOW_DECL std::shared_ptr<callback> learning_rate_scheduler(std::function<double(int, double)> schedule) {
    return std::make_shared<learning_rate_scheduler_callback>(std::move(schedule));
}
TYPEFLOW_DECL std::shared_ptr<early_stopping_callback> early_stopping(early_stopping_options o) {
    return std::make_shared<early_stopping_callback>(std::move(o));
}
TYPEFLOW_DECL std::shared_ptr<callback> csv_logger(std::string path, bool append) {
    return std::make_shared<csv_logger_callback>(std::move(path), append);
}

namespace detail {
inline std::string progress_duration(double secs) {
    char b[32];
    if (secs >= 3600) std::snprintf(b, sizeof b, "%d:%02d:%02d", int(secs) / 3600, int(secs) / 60 % 60, int(secs) % 60);
    else if (secs >= 60) std::snprintf(b, sizeof b, "%d:%02d", int(secs) / 60, int(secs) % 60);
    else std::snprintf(b, sizeof b, "%ds", static_cast<int>(std::lround(secs)));
    return b;
}
inline std::string progress_step_time(double secs) {
    char b[32];
    if (secs >= 1) std::snprintf(b, sizeof b, "%.0fs", secs);
    else if (secs >= 1e-3) std::snprintf(b, sizeof b, "%.0fms", secs * 1e3);
    else std::snprintf(b, sizeof b, "%.0fus", secs * 1e6);
    return b;
}
inline std::string progress_metrics(const logs& l) {
    std::string s;
    char b[64];
    for (auto& [k, v] : l.items()) {
        std::snprintf(b, sizeof b, " - %s: %.4f", k.c_str(), v);
        s += b;
    }
    return s;
}
}  // namespace detail

TYPEFLOW_DECL progress_bar::progress_bar(std::FILE* out, int verbose, std::int64_t steps)
    : out_(out), verbose_(verbose), steps_(steps) {
    if (verbose_ < 0) verbose_ = ::isatty(::fileno(out_)) ? 1 : 2;
}

TYPEFLOW_DECL void progress_bar::on_epoch_begin(int epoch, logs&) {
    start_ = now();
    last_draw_ = -1e300;
    seen_ = 0;
    if (verbose_ >= 1 && total_epochs_ > 0) std::fprintf(out_, "Epoch %d/%d\n", epoch + 1, total_epochs_);
    if (verbose_ >= 1) std::fflush(out_);
}

TYPEFLOW_DECL void progress_bar::on_train_batch_end(int batch, logs& l) {
    seen_ = batch + 1;
    if (verbose_ != 1) return;
    const double t = now();
    if (t - last_draw_ < 0.05 && (steps_ <= 0 || seen_ < steps_)) return;
    last_draw_ = t;
    std::string s = "\r" + counter() + " " + bar() + " - ETA: " + eta(t) + detail::progress_metrics(l);
    std::fputs(s.c_str(), out_);
    std::fflush(out_);
}

TYPEFLOW_DECL void progress_bar::on_epoch_end(int, logs& l) {
    if (verbose_ == 0) return;
    const double secs = now() - start_;
    const double per_step = seen_ ? secs / static_cast<double>(seen_) : 0;
    std::string s = verbose_ == 1 ? "\r" + counter() + " " + bar(true) + " - " : counter() + " - ";
    s += detail::progress_duration(secs) + " " + detail::progress_step_time(per_step) + "/step" +
         detail::progress_metrics(l) + "\n";
    std::fputs(s.c_str(), out_);
    std::fflush(out_);
}

TYPEFLOW_DECL std::string progress_bar::counter() const {
    std::string total = steps_ > 0 ? std::to_string(steps_) : std::string("Unknown");
    std::string cur = std::to_string(seen_);
    if (steps_ > 0 && cur.size() < total.size()) cur.insert(0, total.size() - cur.size(), ' ');
    return cur + "/" + total;
}

TYPEFLOW_DECL std::string progress_bar::bar(bool done) const {
    constexpr int width = 30;
    if (steps_ <= 0) return "[" + std::string(width, '.') + "]";
    const int filled = done ? width : static_cast<int>(width * seen_ / steps_);
    std::string b(static_cast<std::size_t>(width), '.');
    for (int i = 0; i < filled; ++i) b[static_cast<std::size_t>(i)] = '=';
    if (filled < width && filled > 0) b[static_cast<std::size_t>(filled - 1)] = '>';
    return "[" + b + "]";
}

TYPEFLOW_DECL double progress_bar::now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TYPEFLOW_DECL std::string progress_bar::eta(double now) const {
    if (steps_ <= 0 || seen_ == 0) return "?";
    const double secs = now - start_;
    return detail::progress_duration(secs / static_cast<double>(seen_) * static_cast<double>(steps_ - seen_));
}

TYPEFLOW_DECL void tensorboard_callback::on_train_begin(logs&) {
    if (!train_) train_ = std::make_unique<io::summary_writer>(dir_ + "/train");
    if (!validation_) validation_ = std::make_unique<io::summary_writer>(dir_ + "/validation");
}

TYPEFLOW_DECL void tensorboard_callback::on_epoch_end(int epoch, logs& l) {
    for (auto& [k, v] : l.items()) {
        if (k.rfind("val_", 0) == 0) validation_->scalar("epoch_" + k.substr(4), v, epoch);
        else train_->scalar("epoch_" + k, v, epoch);
    }
    if (model) train_->scalar("epoch_learning_rate", model->learning_rate(), epoch);
    train_->flush();
    validation_->flush();
}

TYPEFLOW_DECL void tensorboard_callback::on_train_end(logs&) {
    if (train_) train_->flush();
    if (validation_) validation_->flush();
}

TYPEFLOW_DECL void model_checkpoint_callback::on_epoch_end(int epoch, logs& l) {
    if (o_.save_best_only) {
        const double* v = l.find(o_.monitor);
        if (!v)
            throw typeflow::error("model_checkpoint: save_best_only monitors '" + o_.monitor +
                                  "', which the logs do not have");
        const bool better = o_.maximize ? *v > best_ : *v < best_;
        if (!better) return;
        best_ = *v;
    }
    last_path_ = model->save_checkpoint(dir_, epoch + 1, o_.keep);
}

TYPEFLOW_DECL void learning_rate_scheduler_callback::on_epoch_begin(int epoch, logs&) {
    model->set_learning_rate(f_(epoch, model->learning_rate()));
}

TYPEFLOW_DECL void learning_rate_scheduler_callback::on_epoch_end(int, logs& l) {
    l.set("learning_rate", model->learning_rate());
}

TYPEFLOW_DECL void early_stopping_callback::on_train_begin(logs&) {
    wait_ = 0;
    stopped_epoch_ = -1;
    best_ = o_.maximize ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    best_weights_.reset();
}

TYPEFLOW_DECL void early_stopping_callback::on_epoch_end(int epoch, logs& l) {
    const double* v = l.find(o_.monitor);
    if (!v) throw typeflow::error("early_stopping: monitors '" + o_.monitor + "', which the logs do not have");
    const bool better = o_.maximize ? *v > best_ + o_.min_delta : *v < best_ - o_.min_delta;
    if (better) {
        best_ = *v;
        wait_ = 0;
        if (o_.restore_best_weights) best_weights_ = model->snapshot_weights();
        return;
    }
    if (++wait_ > o_.patience) {
        stopped_epoch_ = epoch;
        model->stop_training = true;
        if (o_.restore_best_weights && best_weights_) model->restore_weights(best_weights_);
    }
}

TYPEFLOW_DECL void csv_logger_callback::on_train_begin(logs&) {
    header_written_ = append_ && std::ifstream(path_).peek() != std::ifstream::traits_type::eof();
    f_.reset(std::fopen(path_.c_str(), append_ ? "a" : "w"));
    if (!f_) throw typeflow::error("csv_logger: cannot open '" + path_ + "' for writing");
}

TYPEFLOW_DECL void csv_logger_callback::on_epoch_end(int epoch, logs& l) {
    if (!header_written_) {
        std::string h = "epoch";
        for (auto& [k, v] : l.items()) h += "," + k;
        std::fprintf(f_.get(), "%s\n", h.c_str());
        header_written_ = true;
    }
    std::fprintf(f_.get(), "%d", epoch);
    for (auto& [k, v] : l.items()) std::fprintf(f_.get(), ",%.17g", v);
    std::fprintf(f_.get(), "\n");
    std::fflush(f_.get());
}

}  // namespace typeflow::models

// typeflow/models/callbacks.hpp — what fit() tells callbacks, and the Keras
// callbacks: the progress bar, TensorBoard, ModelCheckpoint,
// LearningRateScheduler, EarlyStopping, CSVLogger and one made of lambdas.
// A user-defined callback derives from tf::models::callback and overrides
// the hooks it needs.
//
//   struct print_lr : tf::models::callback {
//       void on_epoch_end(int epoch, tf::models::logs& l) override { std::printf("%d %g\n", epoch, model->learning_rate()); }
//   };
//   model.fit(train, {.epochs = 2, .callbacks = {std::make_shared<print_lr>(), tf::models::tensorboard("logs")}});
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <typeflow/core/error.hpp>
#include <typeflow/io/summary.hpp>

namespace typeflow::models {

/// Named values of one batch or epoch, in the order they were set: "loss",
/// the metrics, then "val_loss", "val_<metric>" and what callbacks add.
class logs {
public:
    /// Sets name to v (appended when new).
    void set(const std::string& name, double v) {
        for (auto& [k, x] : items_)
            if (k == name) {
                x = v;
                return;
            }
        items_.emplace_back(name, v);
    }
    /// The value of name, or nullptr.
    const double* find(const std::string& name) const {
        for (auto& [k, x] : items_)
            if (k == name) return &x;
        return nullptr;
    }
    /// The value of name; a tf::error when it is absent.
    double at(const std::string& name) const {
        if (const double* v = find(name)) return *v;
        throw typeflow::error("logs: no value named '" + name + "'");
    }
    const std::vector<std::pair<std::string, double>>& items() const noexcept { return items_; }
    void clear() noexcept { items_.clear(); }

private:
    std::vector<std::pair<std::string, double>> items_;
};

/// What callbacks may ask of the model being trained.
class model_handle {
public:
    virtual ~model_handle() = default;
    /// The optimizer's learning rate (a variable of the model).
    virtual double learning_rate() const = 0;
    virtual void set_learning_rate(double lr) = 0;
    /// Writes a checkpoint of the weights and the optimizer state into dir
    /// (tf::io::saver: "ckpt-<step>", the last `keep` kept); returns its path.
    virtual std::string save_checkpoint(const std::string& dir, std::int64_t step, std::size_t keep) = 0;
    /// A copy of every weight, and putting such a copy back (EarlyStopping's restore_best_weights).
    virtual std::shared_ptr<void> snapshot_weights() const = 0;
    virtual void restore_weights(const std::shared_ptr<void>& snapshot) = 0;
    /// Training steps run so far.
    virtual std::int64_t iterations() const = 0;
    /// Set by a callback to end fit() after the current batch.
    bool stop_training = false;
};

/// A hook into fit(), evaluate() and predict() (Keras' Callback). `model` is
/// set before on_train_begin. Epochs and batches count from 0.
class callback {
public:
    virtual ~callback() = default;
    virtual void on_train_begin(logs&) {}
    virtual void on_train_end(logs&) {}
    virtual void on_epoch_begin(int /*epoch*/, logs&) {}
    /// logs holds the epoch's mean loss and metrics, and the validation ones.
    virtual void on_epoch_end(int /*epoch*/, logs&) {}
    virtual void on_train_batch_begin(int /*batch*/, logs&) {}
    /// logs holds the running mean loss and metrics of the epoch so far.
    virtual void on_train_batch_end(int /*batch*/, logs&) {}
    virtual void on_test_begin(logs&) {}
    virtual void on_test_end(logs&) {}
    model_handle* model = nullptr;
};
using callback_list = std::vector<std::shared_ptr<callback>>;

/// What fit() needs beyond the data.
struct fit_options {
    int epochs = 1;
    /// 0 silent, 1 a progress bar per epoch, 2 one line per epoch; -1 (the
    /// default) is 1 on a terminal and 2 when the output is a file or pipe.
    int verbose = -1;
    callback_list callbacks{};
    /// The epoch to start at (resuming a run: epochs counts to it too).
    int initial_epoch = 0;
    /// Where the progress goes.
    std::FILE* out = stdout;
};

/// Keras' progress bar: on a terminal a bar redrawn in place,
/// `938/938 [==============================] - 9s 9ms/step - loss: 0.2900 - accuracy: 0.8900`;
/// elsewhere one line per epoch without the bar.
class progress_bar : public callback {
public:
    explicit progress_bar(std::FILE* out, int verbose, std::int64_t steps) : out_(out), verbose_(verbose), steps_(steps) {
        if (verbose_ < 0) verbose_ = ::isatty(::fileno(out_)) ? 1 : 2;
    }
    void on_epoch_begin(int epoch, logs&) override {
        start_ = clock::now();
        last_draw_ = {};
        seen_ = 0;
        if (verbose_ >= 1 && total_epochs_ > 0) std::fprintf(out_, "Epoch %d/%d\n", epoch + 1, total_epochs_);
        if (verbose_ >= 1) std::fflush(out_);
    }
    void on_train_batch_end(int batch, logs& l) override {
        seen_ = batch + 1;
        if (verbose_ != 1) return;
        const auto now = clock::now();
        if (now - last_draw_ < std::chrono::milliseconds(50) && (steps_ <= 0 || seen_ < steps_)) return;
        last_draw_ = now;
        std::string s = "\r" + counter() + " " + bar() + " - ETA: " + eta(now) + metrics(l);
        std::fputs(s.c_str(), out_);
        std::fflush(out_);
    }
    void on_epoch_end(int, logs& l) override {
        if (verbose_ == 0) return;
        const double secs = std::chrono::duration<double>(clock::now() - start_).count();
        const double per_step = seen_ ? secs / static_cast<double>(seen_) : 0;
        std::string s = verbose_ == 1 ? "\r" + counter() + " " + bar(true) + " - " : counter() + " - ";
        s += duration(secs) + " " + step_time(per_step) + "/step" + metrics(l) + "\n";
        std::fputs(s.c_str(), out_);
        std::fflush(out_);
    }
    /// Epoch count for the "Epoch k/n" header (0: none).
    void set_epochs(int n) noexcept { total_epochs_ = n; }
    int verbose() const noexcept { return verbose_; }

private:
    using clock = std::chrono::steady_clock;
    std::string counter() const {
        std::string total = steps_ > 0 ? std::to_string(steps_) : std::string("Unknown");
        std::string cur = std::to_string(seen_);
        if (steps_ > 0 && cur.size() < total.size()) cur.insert(0, total.size() - cur.size(), ' ');
        return cur + "/" + total;
    }
    std::string bar(bool done = false) const {
        constexpr int width = 30;
        if (steps_ <= 0) return "[" + std::string(width, '.') + "]";
        const int filled = done ? width : static_cast<int>(width * seen_ / steps_);
        std::string b(static_cast<std::size_t>(width), '.');
        for (int i = 0; i < filled; ++i) b[static_cast<std::size_t>(i)] = '=';
        if (filled < width && filled > 0) b[static_cast<std::size_t>(filled - 1)] = '>';
        return "[" + b + "]";
    }
    std::string eta(clock::time_point now) const {
        if (steps_ <= 0 || seen_ == 0) return "?";
        const double secs = std::chrono::duration<double>(now - start_).count();
        return duration(secs / static_cast<double>(seen_) * static_cast<double>(steps_ - seen_));
    }
    static std::string duration(double secs) {
        char b[32];
        if (secs >= 3600) std::snprintf(b, sizeof b, "%d:%02d:%02d", int(secs) / 3600, int(secs) / 60 % 60, int(secs) % 60);
        else if (secs >= 60) std::snprintf(b, sizeof b, "%d:%02d", int(secs) / 60, int(secs) % 60);
        else std::snprintf(b, sizeof b, "%ds", static_cast<int>(std::lround(secs)));
        return b;
    }
    static std::string step_time(double secs) {
        char b[32];
        if (secs >= 1) std::snprintf(b, sizeof b, "%.0fs", secs);
        else if (secs >= 1e-3) std::snprintf(b, sizeof b, "%.0fms", secs * 1e3);
        else std::snprintf(b, sizeof b, "%.0fus", secs * 1e6);
        return b;
    }
    static std::string metrics(const logs& l) {
        std::string s;
        char b[64];
        for (auto& [k, v] : l.items()) {
            std::snprintf(b, sizeof b, " - %s: %.4f", k.c_str(), v);
            s += b;
        }
        return s;
    }

    std::FILE* out_;
    int verbose_;
    std::int64_t steps_;
    std::int64_t seen_ = 0;
    int total_epochs_ = 0;
    clock::time_point start_{}, last_draw_{};
};

/// Writes the epoch's logs as TensorBoard scalars: "epoch_loss",
/// "epoch_accuracy", ... into <logdir>/train and the validation ones into
/// <logdir>/validation (as Keras' TensorBoard callback).
class tensorboard_callback : public callback {
public:
    explicit tensorboard_callback(std::string logdir) : dir_(std::move(logdir)) {}
    void on_train_begin(logs&) override {
        if (!train_) train_ = std::make_unique<io::summary_writer>(dir_ + "/train");
        if (!validation_) validation_ = std::make_unique<io::summary_writer>(dir_ + "/validation");
    }
    void on_epoch_end(int epoch, logs& l) override {
        for (auto& [k, v] : l.items()) {
            if (k.rfind("val_", 0) == 0) validation_->scalar("epoch_" + k.substr(4), v, epoch);
            else train_->scalar("epoch_" + k, v, epoch);
        }
        if (model) train_->scalar("epoch_learning_rate", model->learning_rate(), epoch);
        train_->flush();
        validation_->flush();
    }
    void on_train_end(logs&) override {
        if (train_) train_->flush();
        if (validation_) validation_->flush();
    }

private:
    std::string dir_;
    std::unique_ptr<io::summary_writer> train_, validation_;
};
inline std::shared_ptr<callback> tensorboard(std::string logdir) {
    return std::make_shared<tensorboard_callback>(std::move(logdir));
}

/// Saves a checkpoint (weights and optimizer state) into dir at the end of
/// every epoch, as "ckpt-<epoch + 1>", keeping the last `keep`; with
/// save_best_only, only when `monitor` improved.
struct model_checkpoint_options {
    std::size_t keep = 5;
    bool save_best_only = false;
    std::string monitor = "val_loss";
    /// True: a larger `monitor` is better (accuracy); false: smaller (loss).
    bool maximize = false;
};
class model_checkpoint_callback : public callback {
public:
    model_checkpoint_callback(std::string dir, model_checkpoint_options o) : dir_(std::move(dir)), o_(std::move(o)) {}
    void on_epoch_end(int epoch, logs& l) override {
        if (o_.save_best_only) {
            const double* v = l.find(o_.monitor);
            if (!v) throw typeflow::error("model_checkpoint: save_best_only monitors '" + o_.monitor + "', which the logs do not have");
            const bool better = o_.maximize ? *v > best_ : *v < best_;
            if (!better) return;
            best_ = *v;
        }
        last_path_ = model->save_checkpoint(dir_, epoch + 1, o_.keep);
    }
    /// The path of the last checkpoint written ("" before the first).
    const std::string& last_path() const noexcept { return last_path_; }

private:
    std::string dir_;
    model_checkpoint_options o_;
    double best_ = o_.maximize ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    std::string last_path_;
};
inline std::shared_ptr<model_checkpoint_callback> model_checkpoint(std::string dir, model_checkpoint_options o = {}) {
    return std::make_shared<model_checkpoint_callback>(std::move(dir), std::move(o));
}

/// Sets the learning rate at the start of every epoch to schedule(epoch, lr)
/// and logs it as "learning_rate".
class learning_rate_scheduler_callback : public callback {
public:
    explicit learning_rate_scheduler_callback(std::function<double(int, double)> f) : f_(std::move(f)) {}
    void on_epoch_begin(int epoch, logs&) override { model->set_learning_rate(f_(epoch, model->learning_rate())); }
    void on_epoch_end(int, logs& l) override { l.set("learning_rate", model->learning_rate()); }

private:
    std::function<double(int, double)> f_;
};
inline std::shared_ptr<callback> learning_rate_scheduler(std::function<double(int, double)> schedule) {
    return std::make_shared<learning_rate_scheduler_callback>(std::move(schedule));
}

/// Stops training when `monitor` has not improved by min_delta for `patience`
/// epochs; with restore_best_weights, puts back the best epoch's weights.
struct early_stopping_options {
    std::string monitor = "val_loss";
    double min_delta = 0;
    int patience = 0;
    bool maximize = false;  ///< a larger value is better (accuracy)
    bool restore_best_weights = false;
};
class early_stopping_callback : public callback {
public:
    explicit early_stopping_callback(early_stopping_options o) : o_(std::move(o)) {}
    void on_train_begin(logs&) override {
        wait_ = 0;
        stopped_epoch_ = -1;
        best_ = o_.maximize ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
        best_weights_.reset();
    }
    void on_epoch_end(int epoch, logs& l) override {
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
    /// The epoch training stopped after, or -1.
    int stopped_epoch() const noexcept { return stopped_epoch_; }

private:
    early_stopping_options o_;
    int wait_ = 0, stopped_epoch_ = -1;
    double best_ = 0;
    std::shared_ptr<void> best_weights_;
};
inline std::shared_ptr<early_stopping_callback> early_stopping(early_stopping_options o = {}) {
    return std::make_shared<early_stopping_callback>(std::move(o));
}

/// Appends one CSV row per epoch to `path`: "epoch" and the logs' names as the header.
class csv_logger_callback : public callback {
public:
    csv_logger_callback(std::string path, bool append) : path_(std::move(path)), append_(append) {}
    void on_train_begin(logs&) override {
        header_written_ = append_ && std::ifstream(path_).peek() != std::ifstream::traits_type::eof();
        f_.reset(std::fopen(path_.c_str(), append_ ? "a" : "w"));
        if (!f_) throw typeflow::error("csv_logger: cannot open '" + path_ + "' for writing");
    }
    void on_epoch_end(int epoch, logs& l) override {
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
    void on_train_end(logs&) override { f_.reset(); }

private:
    struct closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::string path_;
    bool append_, header_written_ = false;
    std::unique_ptr<std::FILE, closer> f_;
};
inline std::shared_ptr<callback> csv_logger(std::string path, bool append = false) {
    return std::make_shared<csv_logger_callback>(std::move(path), append);
}

/// A callback made of functions (Keras' LambdaCallback); leave any empty.
struct lambda_callback : callback {
    std::function<void(int, logs&)> epoch_begin, epoch_end, batch_begin, batch_end;
    std::function<void(logs&)> train_begin, train_end;
    void on_train_begin(logs& l) override {
        if (train_begin) train_begin(l);
    }
    void on_train_end(logs& l) override {
        if (train_end) train_end(l);
    }
    void on_epoch_begin(int e, logs& l) override {
        if (epoch_begin) epoch_begin(e, l);
    }
    void on_epoch_end(int e, logs& l) override {
        if (epoch_end) epoch_end(e, l);
    }
    void on_train_batch_begin(int b, logs& l) override {
        if (batch_begin) batch_begin(b, l);
    }
    void on_train_batch_end(int b, logs& l) override {
        if (batch_end) batch_end(b, l);
    }
};

}  // namespace typeflow::models

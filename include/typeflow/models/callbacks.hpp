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
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>



#include <typeflow/core/config.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/io/summary.hpp>

namespace typeflow::models {

/// Named values of one batch or epoch, in the order they were set: "loss",
/// the metrics, then "val_loss", "val_<metric>" and what callbacks add.
class logs {
public:
    /// Sets name to v (appended when new).
    TYPEFLOW_DECL void set(const std::string& name, double v);
    /// The value of name, or nullptr.
    TYPEFLOW_DECL const double* find(const std::string& name) const;
    /// The value of name; a tf::error when it is absent.
    TYPEFLOW_DECL double at(const std::string& name) const;
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
    /// verbose < 0: 1 when `out` is a terminal, else 2.
    TYPEFLOW_DECL progress_bar(std::FILE* out, int verbose, std::int64_t steps);
    TYPEFLOW_DECL void on_epoch_begin(int epoch, logs&) override;
    TYPEFLOW_DECL void on_train_batch_end(int batch, logs& l) override;
    TYPEFLOW_DECL void on_epoch_end(int, logs& l) override;
    /// Epoch count for the "Epoch k/n" header (0: none).
    void set_epochs(int n) noexcept { total_epochs_ = n; }
    int verbose() const noexcept { return verbose_; }

private:
    // Seconds on a monotonic clock.
    TYPEFLOW_DECL static double now();
    TYPEFLOW_DECL std::string counter() const;
    TYPEFLOW_DECL std::string bar(bool done = false) const;
    TYPEFLOW_DECL std::string eta(double now) const;

    std::FILE* out_;
    int verbose_;
    std::int64_t steps_;
    std::int64_t seen_ = 0;
    int total_epochs_ = 0;
    double start_ = 0, last_draw_ = -1e300;  // seconds (now())
};

/// Writes the epoch's logs as TensorBoard scalars: "epoch_loss",
/// "epoch_accuracy", ... into <logdir>/train and the validation ones into
/// <logdir>/validation (as Keras' TensorBoard callback).
class tensorboard_callback : public callback {
public:
    explicit tensorboard_callback(std::string logdir) : dir_(std::move(logdir)) {}
    TYPEFLOW_DECL void on_train_begin(logs&) override;
    TYPEFLOW_DECL void on_epoch_end(int epoch, logs& l) override;
    TYPEFLOW_DECL void on_train_end(logs&) override;

private:
    std::string dir_;
    std::unique_ptr<io::summary_writer> train_, validation_;
};
TYPEFLOW_DECL std::shared_ptr<callback> tensorboard(std::string logdir);

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
    TYPEFLOW_DECL void on_epoch_end(int epoch, logs& l) override;
    /// The path of the last checkpoint written ("" before the first).
    const std::string& last_path() const noexcept { return last_path_; }

private:
    std::string dir_;
    model_checkpoint_options o_;
    double best_ = o_.maximize ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    std::string last_path_;
};
TYPEFLOW_DECL std::shared_ptr<model_checkpoint_callback> model_checkpoint(std::string dir, model_checkpoint_options o = {});

/// Sets the learning rate at the start of every epoch to schedule(epoch, lr)
/// and logs it as "learning_rate".
class learning_rate_scheduler_callback : public callback {
public:
    explicit learning_rate_scheduler_callback(std::function<double(int, double)> f) : f_(std::move(f)) {}
    TYPEFLOW_DECL void on_epoch_begin(int epoch, logs&) override;
    TYPEFLOW_DECL void on_epoch_end(int, logs& l) override;

private:
    std::function<double(int, double)> f_;
};
TYPEFLOW_DECL std::shared_ptr<callback> learning_rate_scheduler(std::function<double(int, double)> schedule);

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
    TYPEFLOW_DECL void on_train_begin(logs&) override;
    TYPEFLOW_DECL void on_epoch_end(int epoch, logs& l) override;
    /// The epoch training stopped after, or -1.
    int stopped_epoch() const noexcept { return stopped_epoch_; }

private:
    early_stopping_options o_;
    int wait_ = 0, stopped_epoch_ = -1;
    double best_ = 0;
    std::shared_ptr<void> best_weights_;
};
TYPEFLOW_DECL std::shared_ptr<early_stopping_callback> early_stopping(early_stopping_options o = {});

/// Appends one CSV row per epoch to `path`: "epoch" and the logs' names as the header.
class csv_logger_callback : public callback {
public:
    csv_logger_callback(std::string path, bool append) : path_(std::move(path)), append_(append) {}
    TYPEFLOW_DECL void on_train_begin(logs&) override;
    TYPEFLOW_DECL void on_epoch_end(int epoch, logs& l) override;
    void on_train_end(logs&) override { f_.reset(); }

private:
    struct closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::string path_;
    bool append_, header_written_ = false;
    std::unique_ptr<std::FILE, closer> f_;
};
TYPEFLOW_DECL std::shared_ptr<callback> csv_logger(std::string path, bool append = false);

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

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/models/impl/callbacks.ipp>
#endif

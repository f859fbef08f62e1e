// typeflow/io/summary.hpp — scalar and histogram summaries, written at once
// as CSV, JSON lines and a TensorBoard event file.
//
//   tf::io::summary_writer w("logs/run1");
//   w.scalar("loss", l.item(), step);
//   w.histogram("W", W.value(), step);
//   w.flush();                               // `tensorboard --logdir logs` shows them
#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <typeflow/core/config.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/io/events.hpp>

namespace typeflow::io {

/// Which files a summary_writer writes into its directory.
struct summary_options {
    bool tensorboard = true;             ///< events.out.tfevents.<time>.<host>
    bool csv = true;                     ///< scalars.csv and histograms.csv
    bool jsonl = true;                   ///< summaries.jsonl, one JSON object per line
    std::size_t histogram_buckets = 30;  ///< equal-width buckets between min and max
};

/// Writes scalar and histogram summaries to a log directory (created if
/// missing; CSV and JSON-lines files are appended to, so a resumed job
/// continues them).
class summary_writer {
public:
    explicit summary_writer(std::string logdir, summary_options o = {});

    /// The log directory.
    const std::string& logdir() const noexcept { return dir_; }
    /// The TensorBoard event file (empty when options().tensorboard is false).
    std::string event_file() const { return events_ ? events_->path() : std::string(); }
    const summary_options& options() const noexcept { return opt_; }

    /// A scalar `tag` = value at `step`.
    void scalar(const std::string& tag, double value, std::int64_t step);
    /// A histogram of `values` under `tag` at `step`.
    void histogram(const std::string& tag, const std::vector<double>& values, std::int64_t step);
    /// A histogram of a tensor's elements.
    template <value_type_c T>
    void histogram(const std::string& tag, const tensor<T>& values, std::int64_t step) {
        std::vector<double> v(static_cast<std::size_t>(values.size()));
        for (index_t i = 0; i < values.size(); ++i) v[static_cast<std::size_t>(i)] = static_cast<double>(values[i]);
        histogram(tag, v, step);
    }

    /// Writes everything queued to the files.
    void flush();
    ~summary_writer();

private:
    std::unique_ptr<std::ofstream> open_append(const std::string& name, const char* header);

    std::string dir_;
    summary_options opt_;
    std::unique_ptr<event_file_writer> events_;
    std::unique_ptr<std::ofstream> scalars_csv_, histograms_csv_, jsonl_;
};

}  // namespace typeflow::io

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/io/impl/summary.ipp>
#endif

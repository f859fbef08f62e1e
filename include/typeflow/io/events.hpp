// typeflow/io/events.hpp — TensorBoard event files: the protobuf wire format
// of Event / Summary / HistogramProto (the few fields TensorBoard needs),
// TFRecord framing with masked CRC-32C, a writer and a reader.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <typeflow/core/config.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/io/crc32c.hpp>
#include <typeflow/io/file.hpp>

namespace typeflow::io {

/// A histogram as TensorBoard's HistogramProto holds it: bucket i counts the
/// values in (bucket_limit[i-1], bucket_limit[i]].
struct histogram_data {
    double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
    std::vector<double> bucket_limit, bucket;
};

/// One Summary.Value: a tag with a scalar or a histogram.
struct summary_value {
    std::string tag;
    std::optional<float> simple_value;
    std::optional<histogram_data> histo;
};

/// An Event record: wall time, step, and either the file version or a summary.
struct event {
    double wall_time = 0;
    std::int64_t step = 0;
    std::string file_version;
    std::vector<summary_value> summary;
};

/// A histogram of finite values in `buckets` equal-width buckets between
/// their minimum and maximum. Throws tf::error for a NaN or infinite value.
TYPEFLOW_DECL histogram_data make_histogram(const double* values, std::size_t n, std::size_t buckets = 30);

/// The protobuf wire format, as far as event files need it.
namespace pb {
enum wire : std::uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

TYPEFLOW_DECL void put_varint(std::string& out, std::uint64_t v);
TYPEFLOW_DECL void put_tag(std::string& out, std::uint32_t field, wire w);
TYPEFLOW_DECL void put_fixed(std::string& out, std::uint64_t bits, int bytes);
TYPEFLOW_DECL void put_double(std::string& out, std::uint32_t field, double v);
TYPEFLOW_DECL void put_float(std::string& out, std::uint32_t field, float v);
TYPEFLOW_DECL void put_bytes(std::string& out, std::uint32_t field, std::string_view s);
TYPEFLOW_DECL void put_packed_doubles(std::string& out, std::uint32_t field, const std::vector<double>& v);

/// Reads fields of one message; throws tf::error on malformed input.
class reader {
public:
    explicit reader(std::string_view s) : s_(s) {}
    bool done() const noexcept { return pos_ >= s_.size(); }
    /// The next field's number and wire type.
    std::pair<std::uint32_t, wire> next();
    std::uint64_t get_varint();
    std::uint64_t get_fixed(int bytes);
    double get_double();
    float get_float();
    std::string_view get_bytes();
    void skip(wire w);

private:
    void need(std::uint64_t n) const;
    std::string_view s_;
    std::size_t pos_ = 0;
};
}  // namespace pb

/// The Event message's protobuf encoding (Event{wall_time=1, step=2,
/// file_version=3, summary=5}; Summary{value=1}; Value{tag=1, simple_value=2,
/// histo=5}; HistogramProto{min=1 .. sum_squares=5, bucket_limit=6, bucket=7}).
TYPEFLOW_DECL std::string encode_event(const event& e);

/// Parses an Event message (unknown fields are skipped). Throws tf::error.
TYPEFLOW_DECL event decode_event(std::string_view bytes);

/// One TFRecord: uint64 length (LE), masked CRC-32C of those 8 bytes, the
/// data, masked CRC-32C of the data.
TYPEFLOW_DECL std::string tfrecord_frame(std::string_view data);

/// The records of a TFRecord file, every CRC checked. Throws tf::error
/// naming the file and the byte offset of a bad or truncated record.
TYPEFLOW_DECL std::vector<std::string> read_tfrecords(const std::string& path);

/// The events of an event file (the first one holds the file version).
TYPEFLOW_DECL std::vector<event> read_events(const std::string& path);

/// Seconds since the Unix epoch, as Event.wall_time holds them.
TYPEFLOW_DECL double wall_time_now();

/// Appends events to "<logdir>/events.out.tfevents.<unix time>.<hostname>"
/// (a suffix is added if that name is taken); the first record is the file
/// version event "brain.Event:2". Events are buffered until flush().
class event_file_writer {
public:
    explicit event_file_writer(const std::string& logdir);
    event_file_writer(const event_file_writer&) = delete;
    event_file_writer& operator=(const event_file_writer&) = delete;
    ~event_file_writer();

    /// The event file's path.
    const std::string& path() const noexcept { return path_; }
    /// Queues one event.
    void write(const event& e);
    /// A scalar summary.
    void add_scalar(const std::string& tag, float value, std::int64_t step, double wall_time = wall_time_now());
    /// A histogram summary.
    void add_histogram(const std::string& tag, histogram_data h, std::int64_t step, double wall_time = wall_time_now());
    /// Writes the queued events to the file.
    void flush();

private:
    std::string path_;
    int fd_ = -1;
    std::string buf_;
};

}  // namespace typeflow::io

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/io/impl/events.ipp>
#endif

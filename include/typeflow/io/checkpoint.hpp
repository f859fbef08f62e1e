// typeflow/io/checkpoint.hpp — the checkpoint file: a table of contents (per
// tensor its name, dtype, shape, byte count and CRC-32C) followed by the
// tensors' bytes, written with Cereal in binary (default) or JSON, and read
// back with every field validated.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <typeflow/core/config.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/io/crc32c.hpp>
#include <typeflow/io/file.hpp>

namespace typeflow::io {

static_assert(std::endian::native == std::endian::little,
              "typeflow::io: checkpoints store tensors little-endian; big-endian hosts are not supported");

/// How a checkpoint file is encoded: binary (compact, fast) or JSON (for inspection).
enum class format { binary, json };

/// The checkpoint format version this build writes and reads.
inline constexpr std::uint32_t checkpoint_format_version = 1;

/// What a checkpoint file records about one tensor.
struct tensor_info {
    std::string name;
    typeflow::dtype dtype = typeflow::dtype::float32;
    typeflow::dims shape{};
    std::uint64_t bytes = 0;     ///< element count x dtype size
    std::uint32_t crc32c = 0;    ///< of the bytes (0 in an index file)
    std::uint32_t shard = 0;     ///< which shard holds it (index files only)
};

/// A tensor to write: its name, dtype and extents, and its bytes.
struct tensor_source {
    std::string name;
    typeflow::dtype dtype = typeflow::dtype::float32;
    typeflow::dims shape{};
    const void* data = nullptr;
};

namespace detail {
inline constexpr std::string_view checkpoint_magic = "typeflow-checkpoint";
inline constexpr std::string_view index_magic = "typeflow-checkpoint-index";
inline constexpr std::string_view end_marker = "typeflow-checkpoint-end";
inline constexpr std::uint64_t max_name_length = 1u << 16;
inline constexpr std::uint64_t max_tensors = 1u << 24;
/// The most bytes one tensor of a checkpoint may hold: typeflow::max_tensor_bytes
/// (2^63 - 1: every byte count fits std::streamoff, std::ptrdiff_t and std::size_t).
using typeflow::max_tensor_bytes;

/// The byte count of a tensor of dtype d and extents s, or nullopt when an
/// extent is negative, the rank exceeds max_rank, or the element count times
/// the dtype's size exceeds max_tensor_bytes: the check of typeflow::count_elements.
TYPEFLOW_DECL std::optional<std::uint64_t> byte_count(typeflow::dtype d, const dims& s);

/// The checksum of a tensor's record (name, dtype, extents, byte count, CRC
/// and shard) that binary files store after each record.
TYPEFLOW_DECL std::uint32_t record_crc(const tensor_info& t);

/// True when `name` may name a shard of a sharded checkpoint: a plain file
/// name in the index's directory (not empty, not "." or "..", no '/' and no
/// NUL character).
TYPEFLOW_DECL bool is_plain_file_name(std::string_view name) noexcept;

/// Rewrites in place every JSON number of `text` (outside strings) whose
/// digits are all zero and that has a fraction or an exponent ("0e50",
/// "-0.000E+9") to "0.0" or "-0.0" padded with spaces: the same value (zero
/// of the same sign, a double). RapidJSON 1.1.0's full-precision parser,
/// which Cereal's JSON archive uses, has undefined behaviour on a zero with a
/// large exponent (Tencent/rapidjson#1249: DiyFp::Normalize of 0). Returns
/// how many numbers it rewrote.
TYPEFLOW_DECL std::size_t rewrite_zero_numbers(std::string& text) noexcept;
}  // namespace detail

/// Writes one checkpoint file atomically (see atomic_file): the tensors' CRCs
/// are computed, then the table of contents and the bytes are written.
TYPEFLOW_DECL void write_checkpoint(const std::string& path, const std::vector<tensor_source>& tensors,
                                    format f = format::binary);

/// Writes the index of a sharded checkpoint atomically: the shard files (names
/// relative to the index's directory) and, per tensor, its shard, dtype and shape.
TYPEFLOW_DECL void write_checkpoint_index(const std::string& path, const std::vector<std::string>& shard_files,
                                          std::vector<tensor_info> infos, format f = format::binary);

/// Reads a checkpoint or index file: the constructor reads and validates the
/// table of contents (format, version, every record, the shard names of an
/// index); read() reads tensors' bytes and checks their CRCs. Errors are
/// tf::error naming the file and the tensor. A JSON file is read into memory
/// once; one nested deeper than typeflow::detail::max_json_depth levels is
/// refused before it is parsed.
class checkpoint_reader {
public:
    explicit checkpoint_reader(std::string path);
    checkpoint_reader(checkpoint_reader&&) noexcept;
    checkpoint_reader& operator=(checkpoint_reader&&) noexcept;
    ~checkpoint_reader();

    /// The file's path.
    const std::string& path() const noexcept { return path_; }
    /// Binary or JSON.
    format file_format() const noexcept { return format_; }
    /// True for the index of a sharded checkpoint (no tensor bytes of its own).
    bool is_index() const noexcept { return index_; }
    /// The shard files an index names (relative to its directory).
    const std::vector<std::string>& shards() const noexcept { return shards_; }
    /// The table of contents, in file order.
    const std::vector<tensor_info>& tensors() const noexcept { return infos_; }
    /// The position of a tensor in tensors(), if the file has one of that name.
    std::optional<std::size_t> find(std::string_view name) const;

    /// Reads the bytes of every tensor i for which dst(i) gives a buffer (of
    /// tensors()[i].bytes bytes; nullptr skips it), checks each CRC and the end
    /// marker. Throws one tf::error listing every problem.
    void read(const std::function<std::byte*(std::size_t)>& dst);

private:
    struct input;  // the open file (impl/checkpoint.ipp)

    std::string where() const;
    void check_header(const std::string& magic, std::uint32_t version);
    void check_record(std::size_t k, const tensor_info& t);
    void check_shards() const;
    void open_binary();
    void open_json();
    static std::string last_json_name(const std::string& text);

    std::string path_;
    format format_ = format::binary;
    bool index_ = false;
    std::unique_ptr<input> in_;
    std::vector<std::string> shards_;
    std::vector<tensor_info> infos_;
};

}  // namespace typeflow::io

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/io/impl/checkpoint.ipp>
#endif

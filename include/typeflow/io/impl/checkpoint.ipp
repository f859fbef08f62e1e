// typeflow/io/impl/checkpoint.ipp — the checkpoint file (see
// io/checkpoint.hpp): inline in header-only builds, compiled once with
// TYPEFLOW_SEPARATE_COMPILATION. The only io file that includes Cereal.
#pragma once
#include <typeflow/io/checkpoint.hpp>

#include <typeflow/core/json_depth.hpp>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <streambuf>
#include <type_traits>

#include <sys/stat.h>
// the standard headers Cereal includes: outside the -Og region below
#include <deque>
#include <iostream>
#include <stack>
#include <typeindex>
#include <unordered_set>

// Header-only builds compile Cereal and RapidJSON -Og, like TYPEFLOW_DECL
// code (see typeflow/core/config.hpp): 3 s less per translation unit that
// saves and restores. Tensor bytes reach the stream in one call either way.
#if !defined(TYPEFLOW_SEPARATE_COMPILATION) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(TYPEFLOW_NO_COLD_OPTIMIZE) && defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
#define TYPEFLOW_IO_COLD_CEREAL
#pragma GCC push_options
#pragma GCC optimize("Og")
#endif
#include <cereal/archives/json.hpp>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#if defined(TYPEFLOW_IO_COLD_CEREAL)
#pragma GCC pop_options
#undef TYPEFLOW_IO_COLD_CEREAL
#endif

namespace typeflow::io {

namespace detail {
TYPEFLOW_DECL std::optional<typeflow::dtype> dtype_from_name(std::string_view s) {
    for (auto d : {dtype::float32, dtype::float64, dtype::int32, dtype::int64, dtype::boolean})
        if (dtype_name(d) == s) return d;
    return std::nullopt;
}

TYPEFLOW_DECL std::optional<std::uint64_t> byte_count(typeflow::dtype d, const dims& s) {
    const std::size_t size = dtype_size(d);
    if (size == 0 || s.rank > max_rank) return std::nullopt;
    // the same check as a tensor's construction: no extent negative, and
    // neither the element count nor the byte count past max_tensor_bytes
    const element_count c = count_elements(s, size);
    if (!c.ok) return std::nullopt;
    return c.bytes;
}

// Why byte_count refused extents, for an error message.
TYPEFLOW_DECL std::string shape_problem(typeflow::dtype d, const dims& s) {
    if (s.rank > max_rank) return "rank " + std::to_string(s.rank) + " (at most " + std::to_string(max_rank) + ")";
    for (std::size_t i = 0; i < s.rank; ++i)
        if (s.d[i] < 0) return "invalid shape " + to_string(s) + " (a negative extent)";
    return "invalid shape " + to_string(s) + ": its element count times " + std::to_string(dtype_size(d)) +
           " bytes (" + std::string(dtype_name(d)) + ") exceeds " + std::to_string(max_tensor_bytes) + " bytes";
}

TYPEFLOW_DECL bool is_plain_file_name(std::string_view name) noexcept {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
           name.find('\0') == std::string_view::npos;
}

TYPEFLOW_DECL std::size_t rewrite_zero_numbers(std::string& text) noexcept {
    const auto digit = [&text](std::size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
    std::size_t rewritten = 0, i = 0;
    bool in_string = false, escaped = false;
    while (i < text.size()) {
        const char c = text[i];
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            ++i;
            continue;
        }
        if (c == '"') in_string = true;
        if (c != '-' && !digit(i)) {
            ++i;
            continue;
        }
        // a number as RapidJSON reads it: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
        const std::size_t start = i;
        const bool minus = c == '-';
        if (minus && !digit(++i)) continue;  // "-Infinity", or not a number at all
        bool nonzero = false, fraction = false, exponent = false;
        if (text[i] == '0') ++i;
        else {
            nonzero = true;
            while (digit(i)) ++i;
        }
        if (i < text.size() && text[i] == '.' && digit(i + 1)) {
            fraction = true;
            for (++i; digit(i); ++i) nonzero = nonzero || text[i] != '0';
        }
        if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
            std::size_t j = i + 1;
            if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
            if (digit(j)) {
                exponent = true;
                for (i = j; digit(i); ++i) {
                }
            }
        }
        // "0e5" and "0.0" are the shortest such tokens, "-0e5" and "-0.0" the shortest negative ones
        if (!nonzero && (fraction || exponent)) {
            const std::string_view zero = minus ? "-0.0" : "0.0";
            if (std::string_view(text).substr(start, i - start) != zero) {
                std::copy(zero.begin(), zero.end(), text.begin() + static_cast<std::ptrdiff_t>(start));
                for (std::size_t k = start + zero.size(); k < i; ++k) text[k] = ' ';
                ++rewritten;
            }
        }
    }
    return rewritten;
}

// CRC of a record's metadata (so a flipped bit in a name or extent is caught).
TYPEFLOW_DECL std::uint32_t record_crc(const tensor_info& t) {
    std::string s = t.name;
    s.push_back('\0');
    s.push_back(static_cast<char>(t.dtype));
    s.push_back(static_cast<char>(t.shape.rank));
    const auto put = [&s](std::uint64_t v, int n) {
        for (int k = 0; k < n; ++k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
    };
    for (std::size_t i = 0; i < t.shape.rank; ++i) put(static_cast<std::uint64_t>(t.shape.d[i]), 8);
    put(t.bytes, 8);
    put(t.crc32c, 4);
    put(t.shard, 4);
    return crc32c(s);
}

TYPEFLOW_DECL void write_string(cereal::PortableBinaryOutputArchive& ar, std::string_view s) {
    const std::uint64_t n = s.size();
    ar(n);
    if (n) ar(cereal::binary_data(const_cast<char*>(s.data()), static_cast<std::size_t>(n)));
}
// A length-prefixed string of at most max bytes; `where` names the file.
TYPEFLOW_DECL std::string read_string(cereal::PortableBinaryInputArchive& ar, std::uint64_t max, const std::string& where) {
    std::uint64_t n = 0;
    ar(n);
    if (n > max)
        throw error(where + "a string of " + std::to_string(n) + " bytes where at most " + std::to_string(max) +
                    " may be (corrupt length)");
    std::string s(static_cast<std::size_t>(n), '\0');
    if (n) ar(cereal::binary_data(s.data(), static_cast<std::size_t>(n)));
    return s;
}

TYPEFLOW_DECL std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// JSON values of one tensor, by dtype.
TYPEFLOW_DECL void save_json_values(cereal::JSONOutputArchive& ar, const tensor_info& t, const void* data) {
    const auto n = static_cast<std::size_t>(t.bytes / dtype_size(t.dtype));
    // each dtype widened to the JSON number type that holds it exactly
    auto put = [&]<class From, class To>() {
        const auto* p = static_cast<const From*>(data);
        std::vector<To> v(p, p + n);
        ar(cereal::make_nvp("values", v));
    };
    switch (t.dtype) {
        case dtype::float32: put.template operator()<float, double>(); break;
        case dtype::float64: put.template operator()<double, double>(); break;
        case dtype::int32: put.template operator()<std::int32_t, std::int64_t>(); break;
        case dtype::int64: put.template operator()<std::int64_t, std::int64_t>(); break;
        case dtype::boolean: put.template operator()<bool, bool>(); break;
    }
}
// The values as bytes of T. v.size() * sizeof(T) cannot wrap: sizeof(T) <=
// sizeof(V), and v holds v.size() elements of V. A value T cannot hold
// (float32 beyond FLT_MAX, int32 beyond its range) is corrupt: `who` names it.
template <class T, class V>
std::vector<std::byte> to_bytes(const std::vector<V>& v, const std::string& who) {
    static_assert(sizeof(T) <= sizeof(V));
    std::vector<std::byte> b(v.size() * sizeof(T));
    for (std::size_t i = 0; i < v.size(); ++i) {
        bool fits = true;
        if constexpr (std::is_same_v<T, float>) fits = !(v[i] > FLT_MAX || v[i] < -FLT_MAX) || std::isinf(v[i]);
        else if constexpr (!std::is_same_v<T, V>) fits = v[i] >= std::numeric_limits<T>::min() && v[i] <= std::numeric_limits<T>::max();
        if (!fits)
            throw error(who + ": value " + std::to_string(v[i]) + " (element " + std::to_string(i) +
                        ") is out of the range of its dtype");
        const T x = static_cast<T>(v[i]);
        std::memcpy(b.data() + i * sizeof(T), &x, sizeof(T));
    }
    return b;
}
TYPEFLOW_DECL std::vector<std::byte> load_json_values(cereal::JSONInputArchive& ar, typeflow::dtype d,
                                                      const std::string& who) {
    switch (d) {
        case dtype::float32: {
            std::vector<double> v;
            ar(cereal::make_nvp("values", v));
            return to_bytes<float>(v, who);
        }
        case dtype::float64: {
            std::vector<double> v;
            ar(cereal::make_nvp("values", v));
            return to_bytes<double>(v, who);
        }
        case dtype::int32: {
            std::vector<std::int64_t> v;
            ar(cereal::make_nvp("values", v));
            return to_bytes<std::int32_t>(v, who);
        }
        case dtype::int64: {
            std::vector<std::int64_t> v;
            ar(cereal::make_nvp("values", v));
            return to_bytes<std::int64_t>(v, who);
        }
        case dtype::boolean: {
            std::vector<bool> v;
            ar(cereal::make_nvp("values", v));
            std::vector<std::byte> b(v.size());
            for (std::size_t i = 0; i < v.size(); ++i) b[i] = std::byte{static_cast<unsigned char>(v[i] ? 1 : 0)};
            return b;
        }
    }
    return {};
}

// The body of a checkpoint or index file. Data pointers are null for an index.
TYPEFLOW_DECL void write_body(std::ostream& os, format f, std::string_view magic, const std::vector<std::string>& shards,
                              const std::vector<tensor_info>& infos, const std::vector<const void*>& data) {
    if (f == format::binary) {
        cereal::PortableBinaryOutputArchive ar(os);
        write_string(ar, magic);
        ar(checkpoint_format_version);
        ar(static_cast<std::uint64_t>(shards.size()));
        for (const auto& s : shards) write_string(ar, s);
        ar(static_cast<std::uint64_t>(infos.size()));
        for (const auto& t : infos) {
            write_string(ar, t.name);
            ar(static_cast<std::uint8_t>(t.dtype), static_cast<std::uint32_t>(t.shape.rank));
            for (std::size_t i = 0; i < t.shape.rank; ++i) ar(static_cast<std::int64_t>(t.shape.d[i]));
            ar(t.bytes, t.crc32c, t.shard, record_crc(t));
        }
        for (std::size_t k = 0; k < infos.size(); ++k)
            if (data[k] && infos[k].bytes)
                ar(cereal::binary_data(static_cast<char*>(const_cast<void*>(data[k])),
                                       static_cast<std::size_t>(infos[k].bytes)));
        write_string(ar, end_marker);
    } else {
        cereal::JSONOutputArchive ar(os, cereal::JSONOutputArchive::Options(
                                             cereal::JSONOutputArchive::Options::Default()));
        ar(cereal::make_nvp("format", std::string(magic)), cereal::make_nvp("version", checkpoint_format_version),
           cereal::make_nvp("shards", shards));
        ar.setNextName("tensors");
        ar.startNode();
        ar.makeArray();
        for (std::size_t k = 0; k < infos.size(); ++k) {
            const auto& t = infos[k];
            ar.startNode();
            std::vector<std::int64_t> shape(t.shape.d.begin(), t.shape.d.begin() + static_cast<long>(t.shape.rank));
            ar(cereal::make_nvp("name", t.name), cereal::make_nvp("dtype", std::string(dtype_name(t.dtype))),
               cereal::make_nvp("shape", shape), cereal::make_nvp("bytes", t.bytes),
               cereal::make_nvp("crc32c", t.crc32c), cereal::make_nvp("shard", t.shard));
            if (data[k]) save_json_values(ar, t, data[k]);
            ar.finishNode();
        }
        ar.finishNode();
        ar(cereal::make_nvp("end", std::string(end_marker)));
    }
}

TYPEFLOW_DECL std::string hex(std::uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", v);
    return b;
}
}  // namespace detail

TYPEFLOW_DECL void write_checkpoint(const std::string& path, const std::vector<tensor_source>& tensors, format f) {
    std::vector<tensor_info> infos;
    std::vector<const void*> data;
    infos.reserve(tensors.size());
    for (const auto& t : tensors) {
        const auto bytes = detail::byte_count(t.dtype, t.shape);
        if (!bytes)
            throw error("checkpoint '" + path + "': tensor '" + t.name + "' cannot be written: " +
                        detail::shape_problem(t.dtype, t.shape));
        if (*bytes && !t.data) throw error("checkpoint '" + path + "': tensor '" + t.name + "' has no data");
        infos.push_back({t.name, t.dtype, t.shape, *bytes, crc32c(t.data, static_cast<std::size_t>(*bytes)), 0});
        data.push_back(t.data);
    }
    atomic_file file(path);
    detail::write_body(file.stream(), f, detail::checkpoint_magic, {}, infos, data);
    file.commit();
}

TYPEFLOW_DECL void write_checkpoint_index(const std::string& path, const std::vector<std::string>& shard_files,
                                          std::vector<tensor_info> infos, format f) {
    for (std::size_t k = 0; k < shard_files.size(); ++k)
        if (!detail::is_plain_file_name(shard_files[k]))
            throw error("checkpoint index '" + path + "': shard " + std::to_string(k) + " is named '" + shard_files[k] +
                        "': a shard must be a plain file name in the index's directory");
    for (auto& t : infos) {
        const auto bytes = detail::byte_count(t.dtype, t.shape);
        if (!bytes)
            throw error("checkpoint index '" + path + "': tensor '" + t.name + "' cannot be written: " +
                        detail::shape_problem(t.dtype, t.shape));
        t.bytes = *bytes;
        t.crc32c = 0;
        if (t.shard >= shard_files.size())
            throw error("checkpoint index '" + path + "': tensor '" + t.name + "' is in shard " +
                        std::to_string(t.shard) + " of " + std::to_string(shard_files.size()));
    }
    atomic_file file(path);
    detail::write_body(file.stream(), f, detail::index_magic, shard_files, infos,
                       std::vector<const void*>(infos.size(), nullptr));
    file.commit();
}

// The open file of a checkpoint_reader: its stream, the binary archive over
// it and where the tensors' bytes start; or a JSON file's values.
struct checkpoint_reader::input {
    explicit input(const std::string& path) : is(path, std::ios::binary) {}
    std::ifstream is;
    std::unique_ptr<cereal::PortableBinaryInputArchive> ar;
    std::streampos data_start{};
    std::vector<std::vector<std::byte>> json_values;
};

TYPEFLOW_DECL checkpoint_reader::checkpoint_reader(std::string path) : path_(std::move(path)) {
    in_ = std::make_unique<input>(path_);
    if (!in_->is) throw error("cannot open checkpoint '" + path_ + "': " + detail::errno_text(errno));
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw error(where() + "is a directory, not a checkpoint file");
    int c;
    while ((c = in_->is.peek()) == ' ' || c == '\n' || c == '\r' || c == '\t') in_->is.get();
    if (c == std::char_traits<char>::eof()) throw error(where() + "the file is empty");
    format_ = c == '{' ? format::json : format::binary;
    if (format_ == format::binary) open_binary();
    else open_json();
}

TYPEFLOW_DECL checkpoint_reader::checkpoint_reader(checkpoint_reader&&) noexcept = default;
TYPEFLOW_DECL checkpoint_reader& checkpoint_reader::operator=(checkpoint_reader&&) noexcept = default;
TYPEFLOW_DECL checkpoint_reader::~checkpoint_reader() = default;

TYPEFLOW_DECL std::string checkpoint_reader::where() const { return "checkpoint '" + path_ + "': "; }

TYPEFLOW_DECL std::optional<std::size_t> checkpoint_reader::find(std::string_view name) const {
    for (std::size_t i = 0; i < infos_.size(); ++i)
        if (infos_[i].name == name) return i;
    return std::nullopt;
}

TYPEFLOW_DECL_HOT void checkpoint_reader::read(const std::function<std::byte*(std::size_t)>& dst) {
    if (index_) throw error(where() + "is an index; read its shards");
    std::vector<std::string> problems;
    const auto check_crc = [&](std::size_t i, const std::byte* p) {
        const std::uint32_t got = crc32c(p, static_cast<std::size_t>(infos_[i].bytes));
        if (got != infos_[i].crc32c)
            problems.push_back("tensor " + detail::quoted(infos_[i].name) + ": checksum mismatch (stored " +
                               detail::hex(infos_[i].crc32c) + ", computed " + detail::hex(got) + "): its bytes are corrupt");
    };
    if (format_ == format::json) {
        for (std::size_t i = 0; i < infos_.size(); ++i)
            if (std::byte* p = dst(i)) {
                // an empty tensor's vector has no data() to copy from (memcpy's source must not be null)
                if (!in_->json_values[i].empty()) std::memcpy(p, in_->json_values[i].data(), in_->json_values[i].size());
                check_crc(i, p);
            }
    } else {
        in_->is.clear();
        in_->is.seekg(in_->data_start);
        std::size_t i = 0;
        try {
            for (; i < infos_.size(); ++i) {
                const auto n = infos_[i].bytes;
                if (std::byte* p = dst(i)) {
                    if (n) (*in_->ar)(cereal::binary_data(reinterpret_cast<char*>(p), static_cast<std::size_t>(n)));
                    check_crc(i, p);
                } else if (n) {
                    in_->is.seekg(static_cast<std::streamoff>(n), std::ios::cur);
                }
            }
        } catch (const cereal::Exception&) {
            problems.push_back("tensor " + detail::quoted(infos_[i].name) + ": the file is truncated (" +
                               std::to_string(infos_[i].bytes) + " bytes of data expected)");
        }
        if (problems.empty() || i == infos_.size()) {
            bool ok = false;
            try {
                ok = detail::read_string(*in_->ar, 64, where()) == detail::end_marker;
            } catch (...) {
            }
            if (!ok)
                problems.push_back("the end marker is missing: the file is truncated or corrupt after tensor " +
                                   (infos_.empty() ? std::string("(none)") : detail::quoted(infos_.back().name)));
        }
    }
    if (!problems.empty()) {
        std::string msg;
        for (const auto& p : problems) msg += (msg.empty() ? "" : "\n  ") + where() + p;
        throw error(msg);
    }
}

TYPEFLOW_DECL void checkpoint_reader::check_header(const std::string& magic, std::uint32_t version) {
    if (magic == detail::index_magic) index_ = true;
    else if (magic != detail::checkpoint_magic)
        throw error(where() + "not a typeflow checkpoint (format tag '" + magic.substr(0, 40) + "')");
    if (version != checkpoint_format_version)
        throw error(where() + "format version " + std::to_string(version) + ", but this build reads version " +
                    std::to_string(checkpoint_format_version));
}
TYPEFLOW_DECL void checkpoint_reader::check_record(std::size_t k, const tensor_info& t) {
    const std::string who = "tensor " + detail::quoted(t.name) + " (record " + std::to_string(k) + ")";
    const auto bytes = detail::byte_count(t.dtype, t.shape);
    if (!bytes) throw error(where() + who + ": " + detail::shape_problem(t.dtype, t.shape));
    if (*bytes != t.bytes)
        throw error(where() + who + ": " + std::to_string(t.bytes) + " bytes recorded for dtype " +
                    std::string(dtype_name(t.dtype)) + " and shape " + to_string(t.shape));
    if (index_ && t.shard >= shards_.size())
        throw error(where() + who + ": shard " + std::to_string(t.shard) + " of " + std::to_string(shards_.size()));
    for (std::size_t j = 0; j < k; ++j)
        if (infos_[j].name == t.name) throw error(where() + who + ": the name appears twice");
}

TYPEFLOW_DECL void checkpoint_reader::check_shards() const {
    for (std::size_t k = 0; k < shards_.size(); ++k)
        if (!detail::is_plain_file_name(shards_[k]))
            throw error(where() + "shard " + std::to_string(k) + " is named " + detail::quoted(shards_[k].substr(0, 200)) +
                        ": a shard must be a plain file name in the index's directory");
}

TYPEFLOW_DECL void checkpoint_reader::open_binary() {
    in_->ar = std::make_unique<cereal::PortableBinaryInputArchive>(in_->is);
    std::string last = "(none)";
    try {
        const std::string magic = detail::read_string(*in_->ar, 64, where());
        std::uint32_t version = 0;
        (*in_->ar)(version);
        check_header(magic, version);
        std::uint64_t nshards = 0;
        (*in_->ar)(nshards);
        if (nshards > (1u << 20)) throw error(where() + "corrupt shard count " + std::to_string(nshards));
        for (std::uint64_t s = 0; s < nshards; ++s) shards_.push_back(detail::read_string(*in_->ar, 4096, where()));
        check_shards();
        std::uint64_t n = 0;
        (*in_->ar)(n);
        if (n > detail::max_tensors) throw error(where() + "corrupt tensor count " + std::to_string(n));
        for (std::uint64_t k = 0; k < n; ++k) {
            tensor_info t;
            t.name = detail::read_string(*in_->ar, detail::max_name_length, where());
            std::uint8_t d = 0;
            std::uint32_t rank = 0;
            (*in_->ar)(d, rank);
            if (d > static_cast<std::uint8_t>(dtype::boolean) || rank > max_rank)
                throw error(where() + "tensor " + detail::quoted(t.name) + " (record " + std::to_string(k) +
                            "): corrupt record (dtype code " + std::to_string(d) + ", rank " + std::to_string(rank) + ")");
            t.dtype = static_cast<typeflow::dtype>(d);
            t.shape.rank = rank;
            for (std::uint32_t i = 0; i < rank; ++i) (*in_->ar)(t.shape.d[i]);
            std::uint32_t rcrc = 0;
            (*in_->ar)(t.bytes, t.crc32c, t.shard, rcrc);
            if (rcrc != detail::record_crc(t))
                throw error(where() + "tensor " + detail::quoted(t.name) + " (record " + std::to_string(k) +
                            "): its record is corrupt (checksum mismatch)");
            check_record(static_cast<std::size_t>(k), t);
            last = detail::quoted(t.name);
            infos_.push_back(std::move(t));
        }
    } catch (const cereal::Exception&) {
        throw error(where() + "the file is truncated in its table of contents (after tensor " + last + ")");
    }
    in_->data_start = in_->is.tellg();
    if (!index_) {  // every tensor's bytes must lie inside the file (checked before anyone allocates them)
        in_->is.seekg(0, std::ios::end);
        const auto size = static_cast<std::uint64_t>(in_->is.tellg());
        std::uint64_t end = static_cast<std::uint64_t>(in_->data_start);
        for (const auto& t : infos_) {
            end += t.bytes;
            if (end > size)
                throw error(where() + "tensor " + detail::quoted(t.name) + ": the file is truncated (" +
                            std::to_string(t.bytes) + " bytes of data expected, the file ends " +
                            std::to_string(end - size) + " bytes short)");
        }
        in_->is.seekg(in_->data_start);
    }
}

TYPEFLOW_DECL void checkpoint_reader::open_json() {
    // The text is read once, measured, cleaned of RapidJSON's trouble and
    // parsed from memory.
    std::string text((std::istreambuf_iterator<char>(in_->is)), std::istreambuf_iterator<char>());
    if (in_->is.bad()) throw error(where() + "reading the file failed: " + detail::errno_text(errno));
    in_->is.close();
    if (const std::size_t depth = typeflow::detail::json_nesting_depth(text);
        depth > typeflow::detail::max_json_depth)
        throw error(where() + "JSON nested more than " + std::to_string(typeflow::detail::max_json_depth) +
                    " levels deep (a checkpoint needs 4): corrupt, or not a typeflow checkpoint");
    detail::rewrite_zero_numbers(text);
    // an input stream over the text, without a copy
    struct view_buf : std::streambuf {
        explicit view_buf(std::string& s) { setg(s.data(), s.data(), s.data() + s.size()); }
    } buf(text);
    std::istream is(&buf);
    std::string current = "(none)";
    try {
        cereal::JSONInputArchive ar(is);
        std::string magic;
        std::uint32_t version = 0;
        ar(cereal::make_nvp("format", magic), cereal::make_nvp("version", version));
        check_header(magic, version);
        ar(cereal::make_nvp("shards", shards_));
        check_shards();
        ar.setNextName("tensors");
        ar.startNode();
        cereal::size_type n = 0;
        ar(cereal::make_size_tag(n));
        if (n > detail::max_tensors) throw error(where() + "corrupt tensor count " + std::to_string(n));
        for (cereal::size_type k = 0; k < n; ++k) {
            ar.startNode();
            tensor_info t;
            std::string dt;
            std::vector<std::int64_t> shape;
            ar(cereal::make_nvp("name", t.name));
            current = detail::quoted(t.name);
            ar(cereal::make_nvp("dtype", dt), cereal::make_nvp("shape", shape), cereal::make_nvp("bytes", t.bytes),
               cereal::make_nvp("crc32c", t.crc32c), cereal::make_nvp("shard", t.shard));
            const std::string who = "tensor " + current + " (record " + std::to_string(k) + ")";
            const auto d = detail::dtype_from_name(dt);
            if (!d) throw error(where() + who + ": unknown dtype '" + dt + "'");
            if (shape.size() > max_rank) throw error(where() + who + ": rank " + std::to_string(shape.size()));
            t.dtype = *d;
            t.shape.rank = shape.size();
            for (std::size_t i = 0; i < shape.size(); ++i) t.shape.d[i] = shape[i];
            check_record(static_cast<std::size_t>(k), t);
            if (!index_) {
                auto bytes = detail::load_json_values(ar, t.dtype, where() + who);
                if (bytes.size() != t.bytes)
                    throw error(where() + who + ": " + std::to_string(bytes.size() / dtype_size(t.dtype)) +
                                " values for shape " + to_string(t.shape));
                in_->json_values.push_back(std::move(bytes));
            }
            infos_.push_back(std::move(t));
            ar.finishNode();
        }
        ar.finishNode();
        std::string end;
        ar(cereal::make_nvp("end", end));
        if (end != detail::end_marker) throw error(where() + "the end marker is missing");
    } catch (const cereal::Exception& e) {
        if (current == "(none)") current = last_json_name(text);
        throw error(where() + "not readable as a JSON checkpoint (truncated or corrupt) at or after tensor " +
                    current + ": " + e.what());
    }
}

// The last tensor name in JSON text that does not parse: where it broke.
TYPEFLOW_DECL std::string checkpoint_reader::last_json_name(const std::string& text) {
    const std::string key = "\"name\": \"";
    const auto at = text.rfind(key);
    if (at == std::string::npos) return "(none)";
    const auto start = at + key.size();
    const auto stop = text.find('"', start);
    return detail::quoted(text.substr(start, stop == std::string::npos ? 200 : std::min<std::size_t>(stop - start, 200)));
}

}  // namespace typeflow::io

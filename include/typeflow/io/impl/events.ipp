// typeflow/io/impl/events.ipp — TensorBoard event files (see
// io/events.hpp): inline in header-only builds, compiled once with
// TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/io/events.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace typeflow::io {

TYPEFLOW_DECL histogram_data make_histogram(const double* values, std::size_t n, std::size_t buckets) {
    histogram_data h;
    if (buckets == 0) buckets = 1;
    if (n == 0) return h;
    h.min = values[0];
    h.max = values[0];
    for (std::size_t i = 0; i < n; ++i) {
        const double v = values[i];
        if (!std::isfinite(v)) throw error("histogram: value " + std::to_string(i) + " is not finite");
        h.min = std::min(h.min, v);
        h.max = std::max(h.max, v);
        h.sum += v;
        h.sum_squares += v * v;
    }
    h.num = static_cast<double>(n);
    if (h.max == h.min) buckets = 1;
    const double width = (h.max - h.min) / static_cast<double>(buckets);
    h.bucket_limit.resize(buckets);
    for (std::size_t k = 0; k + 1 < buckets; ++k) h.bucket_limit[k] = h.min + width * static_cast<double>(k + 1);
    h.bucket_limit[buckets - 1] = h.max;
    h.bucket.assign(buckets, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        const auto it = std::lower_bound(h.bucket_limit.begin(), h.bucket_limit.end(), values[i]);
        const auto k = std::min<std::size_t>(static_cast<std::size_t>(it - h.bucket_limit.begin()), buckets - 1);
        h.bucket[k] += 1;
    }
    return h;
}

namespace pb {
TYPEFLOW_DECL void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
TYPEFLOW_DECL void put_tag(std::string& out, std::uint32_t field, wire w) { put_varint(out, (std::uint64_t{field} << 3) | w); }
TYPEFLOW_DECL void put_fixed(std::string& out, std::uint64_t bits, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}
TYPEFLOW_DECL void put_double(std::string& out, std::uint32_t field, double v) {
    put_tag(out, field, fixed64);
    std::uint64_t b;
    std::memcpy(&b, &v, 8);
    put_fixed(out, b, 8);
}
TYPEFLOW_DECL void put_float(std::string& out, std::uint32_t field, float v) {
    put_tag(out, field, fixed32);
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    put_fixed(out, b, 4);
}
TYPEFLOW_DECL void put_bytes(std::string& out, std::uint32_t field, std::string_view s) {
    put_tag(out, field, length_delimited);
    put_varint(out, s.size());
    out.append(s);
}
TYPEFLOW_DECL void put_packed_doubles(std::string& out, std::uint32_t field, const std::vector<double>& v) {
    std::string body;
    for (double d : v) {
        std::uint64_t b;
        std::memcpy(&b, &d, 8);
        put_fixed(body, b, 8);
    }
    put_bytes(out, field, body);
}

TYPEFLOW_DECL std::pair<std::uint32_t, wire> reader::next() {
    const auto key = get_varint();
    return {static_cast<std::uint32_t>(key >> 3), static_cast<wire>(key & 7)};
}
TYPEFLOW_DECL std::uint64_t reader::get_varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        need(1);
        const auto b = static_cast<unsigned char>(s_[pos_++]);
        v |= std::uint64_t{b & 0x7Fu} << shift;
        if (!(b & 0x80)) return v;
    }
    throw error("protobuf: varint too long");
}
TYPEFLOW_DECL std::uint64_t reader::get_fixed(int bytes) {
    need(static_cast<std::size_t>(bytes));
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t{static_cast<unsigned char>(s_[pos_++])} << (8 * i);
    return v;
}
TYPEFLOW_DECL double reader::get_double() {
    const auto b = get_fixed(8);
    double d;
    std::memcpy(&d, &b, 8);
    return d;
}
TYPEFLOW_DECL float reader::get_float() {
    const auto b = static_cast<std::uint32_t>(get_fixed(4));
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
TYPEFLOW_DECL std::string_view reader::get_bytes() {
    const auto n = get_varint();
    need(n);
    const auto v = s_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return v;
}
TYPEFLOW_DECL void reader::skip(wire w) {
    switch (w) {
        case varint: get_varint(); break;
        case fixed64: get_fixed(8); break;
        case fixed32: get_fixed(4); break;
        case length_delimited: get_bytes(); break;
        default: throw error("protobuf: unsupported wire type " + std::to_string(static_cast<int>(w)));
    }
}

TYPEFLOW_DECL void reader::need(std::uint64_t n) const {
    if (n > s_.size() - pos_) throw error("protobuf: message truncated");
}
}  // namespace pb

TYPEFLOW_DECL std::string encode_event(const event& e) {
    std::string out;
    pb::put_double(out, 1, e.wall_time);
    if (e.step != 0) {
        pb::put_tag(out, 2, pb::varint);
        pb::put_varint(out, static_cast<std::uint64_t>(e.step));
    }
    if (!e.file_version.empty()) pb::put_bytes(out, 3, e.file_version);
    if (!e.summary.empty()) {
        std::string summary;
        for (const auto& v : e.summary) {
            std::string value;
            pb::put_bytes(value, 1, v.tag);
            if (v.simple_value) pb::put_float(value, 2, *v.simple_value);
            if (v.histo) {
                const auto& h = *v.histo;
                std::string hp;
                pb::put_double(hp, 1, h.min);
                pb::put_double(hp, 2, h.max);
                pb::put_double(hp, 3, h.num);
                pb::put_double(hp, 4, h.sum);
                pb::put_double(hp, 5, h.sum_squares);
                pb::put_packed_doubles(hp, 6, h.bucket_limit);
                pb::put_packed_doubles(hp, 7, h.bucket);
                pb::put_bytes(value, 5, hp);
            }
            pb::put_bytes(summary, 1, value);
        }
        pb::put_bytes(out, 5, summary);
    }
    return out;
}

namespace detail {
TYPEFLOW_DECL std::vector<double> packed_or_single(pb::reader& r, pb::wire w, std::vector<double> acc) {
    if (w == pb::length_delimited) {
        pb::reader body(r.get_bytes());
        while (!body.done()) acc.push_back(body.get_double());
    } else if (w == pb::fixed64) {
        acc.push_back(r.get_double());
    } else {
        r.skip(w);
    }
    return acc;
}
TYPEFLOW_DECL histogram_data decode_histogram(std::string_view s) {
    histogram_data h;
    pb::reader r(s);
    while (!r.done()) {
        const auto [f, w] = r.next();
        double* d = f == 1 ? &h.min : f == 2 ? &h.max : f == 3 ? &h.num : f == 4 ? &h.sum : f == 5 ? &h.sum_squares : nullptr;
        if (d && w == pb::fixed64) *d = r.get_double();
        else if (f == 6) h.bucket_limit = packed_or_single(r, w, std::move(h.bucket_limit));
        else if (f == 7) h.bucket = packed_or_single(r, w, std::move(h.bucket));
        else r.skip(w);
    }
    return h;
}
}  // namespace detail

TYPEFLOW_DECL event decode_event(std::string_view bytes) {
    event e;
    pb::reader r(bytes);
    while (!r.done()) {
        const auto [f, w] = r.next();
        if (f == 1 && w == pb::fixed64) e.wall_time = r.get_double();
        else if (f == 2 && w == pb::varint) e.step = static_cast<std::int64_t>(r.get_varint());
        else if (f == 3 && w == pb::length_delimited) e.file_version = std::string(r.get_bytes());
        else if (f == 5 && w == pb::length_delimited) {
            pb::reader sr(r.get_bytes());
            while (!sr.done()) {
                const auto [sf, sw] = sr.next();
                if (sf != 1 || sw != pb::length_delimited) {
                    sr.skip(sw);
                    continue;
                }
                summary_value v;
                pb::reader vr(sr.get_bytes());
                while (!vr.done()) {
                    const auto [vf, vw] = vr.next();
                    if (vf == 1 && vw == pb::length_delimited) v.tag = std::string(vr.get_bytes());
                    else if (vf == 2 && vw == pb::fixed32) v.simple_value = vr.get_float();
                    else if (vf == 5 && vw == pb::length_delimited) v.histo = detail::decode_histogram(vr.get_bytes());
                    else vr.skip(vw);
                }
                e.summary.push_back(std::move(v));
            }
        } else r.skip(w);
    }
    return e;
}

TYPEFLOW_DECL std::string tfrecord_frame(std::string_view data) {
    std::string out;
    out.reserve(data.size() + 16);
    pb::put_fixed(out, data.size(), 8);
    pb::put_fixed(out, mask_crc(crc32c(out.data(), 8)), 4);
    out.append(data);
    pb::put_fixed(out, mask_crc(crc32c(data)), 4);
    return out;
}

TYPEFLOW_DECL std::vector<std::string> read_tfrecords(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw error("cannot open record file '" + path + "': " + detail::errno_text(errno));
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw error("record file '" + path + "' is a directory");
    const std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::string> out;
    std::size_t pos = 0;
    const auto u = [&s](std::size_t at, int n) {
        std::uint64_t v = 0;
        for (int i = 0; i < n; ++i) v |= std::uint64_t{static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)])} << (8 * i);
        return v;
    };
    while (pos < s.size()) {
        const std::string where = "record file '" + path + "', record at byte " + std::to_string(pos) + ": ";
        if (s.size() - pos < 12) throw error(where + "truncated header");
        const auto len = u(pos, 8);
        if (static_cast<std::uint32_t>(u(pos + 8, 4)) != mask_crc(crc32c(s.data() + pos, 8)))
            throw error(where + "length CRC mismatch");
        if (len > s.size() - pos - 12 || s.size() - pos - 12 - len < 4) throw error(where + "truncated data");
        const std::string data = s.substr(pos + 12, static_cast<std::size_t>(len));
        if (static_cast<std::uint32_t>(u(pos + 12 + len, 4)) != mask_crc(crc32c(data)))
            throw error(where + "data CRC mismatch");
        out.push_back(data);
        pos += 16 + static_cast<std::size_t>(len);
    }
    return out;
}

TYPEFLOW_DECL std::vector<event> read_events(const std::string& path) {
    std::vector<event> out;
    for (const auto& r : read_tfrecords(path)) {
        try {
            out.push_back(decode_event(r));
        } catch (const error& e) {
            const std::string what = e.what();  // "typeflow: protobuf: ..."
            throw error("event file '" + path + "', event " + std::to_string(out.size()) + ": " +
                        what.substr(what.rfind("typeflow: ", 0) == 0 ? 10 : 0));
        }
    }
    return out;
}

TYPEFLOW_DECL double wall_time_now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

TYPEFLOW_DECL event_file_writer::event_file_writer(const std::string& logdir) {
    std::filesystem::create_directories(logdir);
    const double now = wall_time_now();
    char host[256] = "localhost";
    if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
    host[sizeof host - 1] = '\0';
    const std::string base =
        logdir + "/events.out.tfevents." + std::to_string(static_cast<long long>(now)) + "." + host;
    path_ = base;
    for (int k = 1; (fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0; ++k) {
        if (errno != EEXIST || k > 1000) throw error("cannot create event file '" + path_ + "': " + detail::errno_text(errno));
        path_ = base + "." + std::to_string(::getpid()) + "." + std::to_string(k);
    }
    event v;
    v.wall_time = now;
    v.file_version = "brain.Event:2";
    write(v);
    flush();
}
TYPEFLOW_DECL event_file_writer::~event_file_writer() {
    try {
        flush();
    } catch (...) {
    }
    ::close(fd_);
}

TYPEFLOW_DECL void event_file_writer::write(const event& e) {
    buf_ += tfrecord_frame(encode_event(e));
    if (buf_.size() > (1u << 16)) flush();
}
TYPEFLOW_DECL void event_file_writer::add_scalar(const std::string& tag, float value, std::int64_t step, double wall_time) {
    event e;
    e.wall_time = wall_time;
    e.step = step;
    e.summary.push_back({tag, value, std::nullopt});
    write(e);
}
TYPEFLOW_DECL void event_file_writer::add_histogram(const std::string& tag, histogram_data h, std::int64_t step,
                                                    double wall_time) {
    event e;
    e.wall_time = wall_time;
    e.step = step;
    e.summary.push_back({tag, std::nullopt, std::move(h)});
    write(e);
}
TYPEFLOW_DECL void event_file_writer::flush() {
    std::size_t done = 0;
    while (done < buf_.size()) {
        const ssize_t w = ::write(fd_, buf_.data() + done, buf_.size() - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            throw error("writing event file '" + path_ + "' failed: " + detail::errno_text(errno));
        }
        done += static_cast<std::size_t>(w);
    }
    buf_.clear();
}

}  // namespace typeflow::io

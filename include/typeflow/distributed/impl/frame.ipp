#pragma once
#include <typeflow/distributed/frame.hpp>

#include <algorithm>
#include <cstdio>

namespace typeflow::dist {

TYPEFLOW_DIST_DECL std::string_view name_of(op_code op) noexcept {
    switch (op) {
    case op_code::none: return "none";
    case op_code::all_reduce: return "all_reduce";
    case op_code::broadcast: return "broadcast";
    case op_code::all_gather: return "all_gather";
    case op_code::reduce_scatter: return "reduce_scatter";
    case op_code::barrier: return "barrier";
    case op_code::send: return "send";
    case op_code::pull: return "pull";
    case op_code::push: return "push";
    }
    return "?";
}

TYPEFLOW_DIST_DECL std::string_view name_of(frame_type t) noexcept {
    switch (t) {
    case frame_type::hello: return "hello";
    case frame_type::challenge: return "challenge";
    case frame_type::response: return "response";
    case frame_type::accept: return "accept";
    case frame_type::data: return "data";
    case frame_type::heartbeat: return "heartbeat";
    case frame_type::control: return "control";
    case frame_type::abort: return "abort";
    case frame_type::goodbye: return "goodbye";
    }
    return "?";
}

namespace detail {
template <class T> inline void put_le(std::byte* p, T v) noexcept {
    for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff);
}
template <class T> inline T get_le(const std::byte* p) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return static_cast<T>(v);
}
} // namespace detail

// Layout (little-endian):
//   0 magic u32 | 4 version u16 | 6 type u8 | 7 op u8 | 8 dtype u8 | 9 reduce u8 | 10 reserved u16
//  12 epoch u32 | 16 seq u64 | 24 count u64 | 32 offset u64 | 40 length u64
TYPEFLOW_DIST_DECL void encode_header(const frame_header& h, std::byte* p) noexcept {
    using detail::put_le;
    put_le<std::uint32_t>(p + 0, frame_magic);
    put_le<std::uint16_t>(p + 4, frame_version);
    p[6] = static_cast<std::byte>(h.type);
    p[7] = static_cast<std::byte>(h.op);
    p[8] = static_cast<std::byte>(h.dtype_code);
    p[9] = static_cast<std::byte>(h.reduce_code);
    put_le<std::uint16_t>(p + 10, 0);
    put_le<std::uint32_t>(p + 12, h.epoch);
    put_le<std::uint64_t>(p + 16, h.seq);
    put_le<std::uint64_t>(p + 24, h.count);
    put_le<std::uint64_t>(p + 32, h.offset);
    put_le<std::uint64_t>(p + 40, h.length);
}

TYPEFLOW_DIST_DECL header_result parse_header(const std::byte* p, std::size_t max_payload) {
    using detail::get_le;
    header_result r;
    auto refuse = [&](std::string why) {
        r.ok = false;
        r.reason = std::move(why);
        return r;
    };
    const auto magic = get_le<std::uint32_t>(p);
    if (magic != frame_magic) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "bad magic 0x%08x (expected 0x%08x)", magic, frame_magic);
        return refuse(buf);
    }
    const auto version = get_le<std::uint16_t>(p + 4);
    if (version != frame_version)
        return refuse("unsupported protocol version " + std::to_string(version) + " (this build speaks " +
                      std::to_string(frame_version) + ")");
    const auto type = static_cast<std::uint8_t>(p[6]);
    if (type < 1 || type > 9) return refuse("unknown frame type " + std::to_string(type));
    if (get_le<std::uint16_t>(p + 10) != 0) return refuse("reserved header bytes are not zero");
    auto& h = r.header;
    h.type = static_cast<frame_type>(type);
    h.op = static_cast<op_code>(static_cast<std::uint8_t>(p[7]));
    h.dtype_code = static_cast<std::uint8_t>(p[8]);
    h.reduce_code = static_cast<std::uint8_t>(p[9]);
    h.epoch = get_le<std::uint32_t>(p + 12);
    h.seq = get_le<std::uint64_t>(p + 16);
    h.count = get_le<std::uint64_t>(p + 24);
    h.offset = get_le<std::uint64_t>(p + 32);
    h.length = get_le<std::uint64_t>(p + 40);
    const std::string tn(name_of(h.type));
    if (h.type != frame_type::data) {
        if (h.op != op_code::none || h.dtype_code != 0 || h.reduce_code != 0 || h.offset != 0)
            return refuse(tn + " frame with data fields set");
        std::uint64_t want_min = 0, want_max = 0;
        switch (h.type) {
        case frame_type::hello: want_min = want_max = 32; break;
        case frame_type::challenge: want_min = want_max = 64; break;
        case frame_type::response: want_min = want_max = 32; break;
        case frame_type::abort: want_max = max_abort_bytes; break;
        case frame_type::control: want_max = max_control_bytes; break;
        default: break;
        }
        if (h.length < want_min || h.length > want_max)
            return refuse(tn + " frame with payload length " + std::to_string(h.length) + " (allowed " +
                          std::to_string(want_min) + ".." + std::to_string(want_max) + ")");
        if (h.count != 0) return refuse(tn + " frame with nonzero count");
        r.ok = true;
        return r;
    }
    if (h.op == op_code::none || static_cast<std::uint8_t>(h.op) > 8)
        return refuse("data frame with unknown op " + std::to_string(static_cast<unsigned>(h.op)));
    const auto dt = dtype_of_wire(h.dtype_code);
    if (!dt) return refuse("data frame with unknown dtype " + std::to_string(h.dtype_code));
    if (h.reduce_code > 4) return refuse("data frame with unknown reduction " + std::to_string(h.reduce_code));
    const bool reducing = h.op == op_code::all_reduce || h.op == op_code::reduce_scatter;
    if (reducing != (h.reduce_code != 0))
        return refuse(reducing ? "reducing data frame without a reduction" : "non-reducing data frame with a reduction");
    if (h.length > max_payload)
        return refuse("payload length " + std::to_string(h.length) + " exceeds the limit of " +
                      std::to_string(max_payload) + " bytes");
    const auto es = dtype_size(*dt);
    if (h.length % es != 0)
        return refuse("payload length " + std::to_string(h.length) + " is not a multiple of the element size " +
                      std::to_string(es));
    const auto n = h.length / es;
    if (h.offset > h.count || n > h.count - h.offset)
        return refuse("data frame slice [" + std::to_string(h.offset) + ", +" + std::to_string(n) +
                      ") lies outside the buffer of " + std::to_string(h.count) + " elements");
    r.ok = true;
    return r;
}

TYPEFLOW_DIST_DECL std::string describe(const frame_header& h) {
    std::string s(name_of(h.type));
    if (h.type != frame_type::data) return s;
    s += " ";
    s += name_of(h.op);
    if (h.reduce_code) {
        s += "(";
        s += name_of(static_cast<reduce_op>(h.reduce_code));
        s += ")";
    }
    const auto dt = dtype_of_wire(h.dtype_code);
    s += " seq " + std::to_string(h.seq) + " " + std::string(dt ? dtype_name(*dt) : "?") + "[" +
         std::to_string(h.count) + "] slice " + std::to_string(h.offset) + "+" +
         std::to_string(h.length / (dt ? dtype_size(*dt) : 1));
    if (h.epoch) s += " epoch " + std::to_string(h.epoch);
    return s;
}

} // namespace typeflow::dist

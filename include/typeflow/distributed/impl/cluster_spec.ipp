#pragma once
// JSON is read with RapidJSON (header-only, strict RFC 8259 parser that
// reports the error offset; Debian's libcereal-dev already depends on it).
// Member iterators are compared with < because C++20 makes their != ambiguous.

#include <typeflow/distributed/cluster_spec.hpp>
#include <typeflow/core/json_depth.hpp>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace typeflow::dist {

TYPEFLOW_DIST_DECL std::string_view name_of(role r) noexcept {
    switch (r) {
    case role::chief: return "chief";
    case role::worker: return "worker";
    case role::ps: return "ps";
    }
    return "?";
}

TYPEFLOW_DIST_DECL std::string task_id::name() const { return std::string(name_of(type)) + ":" + std::to_string(index); }

TYPEFLOW_DIST_DECL std::pair<std::string, unsigned short> split_address(std::string_view a, std::string_view what) {
    auto fail = [&](std::string_view why) -> std::pair<std::string, unsigned short> {
        throw error(std::string(what) + ": " + std::string(why) + ", expected \"host:port\", got \"" + std::string(a) +
                    "\"");
    };
    std::string_view host, port;
    if (!a.empty() && a.front() == '[') {
        auto close = a.find(']');
        if (close == std::string_view::npos || close + 1 >= a.size() || a[close + 1] != ':')
            return fail("bad bracketed IPv6 address");
        host = a.substr(1, close - 1);
        port = a.substr(close + 2);
    } else {
        auto colon = a.rfind(':');
        if (colon == std::string_view::npos) return fail("missing port");
        host = a.substr(0, colon);
        port = a.substr(colon + 1);
        if (host.find(':') != std::string_view::npos) return fail("IPv6 host must be in brackets");
    }
    if (host.empty()) return fail("empty host");
    if (port.empty() || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return fail("port is not a number");
    // Decimal, leading zeros allowed ("05000" is 5000, as the resolver reads it).
    const auto first = port.find_first_not_of('0');
    const std::string_view digits = first == std::string_view::npos ? std::string_view("0") : port.substr(first);
    const unsigned long p = digits.size() > 5 ? 0 : std::stoul(std::string(digits));
    if (p < 1 || p > 65535) return fail("port out of range 1..65535");
    return {std::string(host), static_cast<unsigned short>(p)};
}

namespace detail {

/// An IPv4 address in dotted decimal.
TYPEFLOW_DIST_DECL std::string ipv4_string(const in_addr& a) {
    char buf[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

/// An IPv6 address in RFC 5952 form, bracketed; an IPv4-mapped one
/// (::ffff:a.b.c.d, the same socket as a.b.c.d) as its IPv4 address.
TYPEFLOW_DIST_DECL std::string ipv6_string(const in6_addr& a) {
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
        in_addr v4;
        std::memcpy(&v4, a.s6_addr + 12, 4);
        return ipv4_string(v4);
    }
    char buf[INET6_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET6, &a, buf, sizeof buf);
    return "[" + std::string(buf) + "]";
}

TYPEFLOW_DIST_DECL std::string lower_case(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// `localhost` as the transport reaches it: the first address the resolver
/// gives for it (the transport's acceptor binds that one, and a connection
/// tries it first); empty if it does not resolve.
TYPEFLOW_DIST_DECL std::string resolve_localhost(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return {};
    std::string out;
    if (res->ai_family == AF_INET) out = ipv4_string(reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr);
    else if (res->ai_family == AF_INET6) out = ipv6_string(reinterpret_cast<const sockaddr_in6*>(res->ai_addr)->sin6_addr);
    ::freeaddrinfo(res);
    return out;
}

/// The host part of canonical_address.
TYPEFLOW_DIST_DECL std::string canonical_host(const std::string& host, bool bracketed) {
    if (bracketed) {
        in6_addr a6;
        if (::inet_pton(AF_INET6, host.c_str(), &a6) == 1) return ipv6_string(a6);
        // With a zone index ("fe80::1%eth0"): the address in lower case,
        // the interface name as written.
        const auto zone = host.find('%');
        return "[" + lower_case(host.substr(0, zone)) + (zone == std::string::npos ? "" : host.substr(zone)) + "]";
    }
    // A numeric IPv4 host in any form the resolver accepts (inet_aton:
    // "127.1", "127.000.000.001", "0x7f.0.0.1").
    if (std::all_of(host.begin(), host.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'x' || c == 'X'; })) {
        in_addr a4;
        if (::inet_aton(host.c_str(), &a4) != 0) return ipv4_string(a4);
    }
    std::string name = lower_case(host); // host names are case-insensitive
    if (name.size() > 1 && name.back() == '.') name.pop_back(); // "host." is "host"
    if (name == "localhost")
        if (auto a = resolve_localhost(host); !a.empty()) return a;
    return name;
}

} // namespace detail

TYPEFLOW_DIST_DECL std::string canonical_address(std::string_view address, std::string_view what) {
    auto [host, port] = split_address(address, what);
    return detail::canonical_host(host, !address.empty() && address.front() == '[') + ":" + std::to_string(port);
}

namespace detail {

/// An integer option: its JSON key, its transport_options field, unit and range.
struct option_field {
    const char* key;
    const char* field;
    const char* unit;
    std::uint64_t min, max;
};

TYPEFLOW_DIST_DECL const option_field* find_option(std::string_view key) {
    constexpr std::uint64_t dmax = static_cast<std::uint64_t>(transport_options::max_duration_count);
    constexpr std::uint64_t bmax = transport_options::max_buffer_bytes;
    constexpr std::uint64_t smax = SIZE_MAX;
    static constexpr option_field table[] = {
        {"heartbeat_timeout_ms", "heartbeat_timeout", "ms", 1, dmax},
        {"connect_timeout_ms", "connect_timeout", "ms", 1, dmax},
        {"handshake_timeout_ms", "handshake_timeout", "ms", 1, dmax},
        {"op_timeout_ms", "op_timeout", "ms", 1, dmax},
        {"spin_wait_us", "spin_wait", "us", 0, dmax},
        {"max_frame_bytes", "max_frame_bytes", "bytes", 1, bmax},
        {"segment_bytes", "segment_bytes", "bytes", 1, bmax},
        {"max_unexpected_bytes", "max_unexpected_bytes", "bytes", 1, bmax},
        {"caller_read_bytes", "caller_read_bytes", "bytes", 1, smax},
        {"send_thread_bytes", "send_thread_bytes", "bytes", 1, smax},
    };
    for (const auto& f : table)
        if (key == f.key || key == f.field) return &f;
    return nullptr;
}

TYPEFLOW_DIST_DECL std::string range_string(const option_field& f) {
    return std::to_string(f.min) + ".." + std::to_string(f.max) + " " + f.unit;
}

/// Throws unless `v` is in f's range; `name` is how the message names it.
TYPEFLOW_DIST_DECL void check_option(std::string_view origin, const std::string& name, const option_field& f, std::int64_t v) {
    if (v >= 0 && static_cast<std::uint64_t>(v) >= f.min && static_cast<std::uint64_t>(v) <= f.max) return;
    throw error(std::string(origin) + ": " + name + " is " + std::to_string(v) + ", outside the allowed range " + range_string(f));
}
TYPEFLOW_DIST_DECL void check_option(std::string_view origin, const std::string& name, const option_field& f, std::uint64_t v) {
    if (v >= f.min && v <= f.max) return;
    throw error(std::string(origin) + ": " + name + " is " + std::to_string(v) + ", outside the allowed range " + range_string(f));
}

} // namespace detail

TYPEFLOW_DIST_DECL void check_options(const transport_options& o, std::string_view origin) {
    auto dur = [&](const char* key, std::int64_t v) {
        const auto& f = *detail::find_option(key);
        detail::check_option(origin, std::string("transport_options.") + f.field, f, v);
    };
    auto size = [&](const char* key, std::size_t v) {
        const auto& f = *detail::find_option(key);
        detail::check_option(origin, std::string("transport_options.") + f.field, f, static_cast<std::uint64_t>(v));
    };
    dur("heartbeat_timeout_ms", o.heartbeat_timeout.count());
    dur("connect_timeout_ms", o.connect_timeout.count());
    dur("handshake_timeout_ms", o.handshake_timeout.count());
    dur("op_timeout_ms", o.op_timeout.count());
    dur("spin_wait_us", o.spin_wait.count());
    size("max_frame_bytes", o.max_frame_bytes);
    size("segment_bytes", o.segment_bytes);
    size("max_unexpected_bytes", o.max_unexpected_bytes);
    size("caller_read_bytes", o.caller_read_bytes);
    size("send_thread_bytes", o.send_thread_bytes);
    if (o.segment_bytes > o.max_frame_bytes)
        throw error(std::string(origin) + ": transport_options.segment_bytes exceeds transport_options.max_frame_bytes (" +
                    std::to_string(o.segment_bytes) + " > " + std::to_string(o.max_frame_bytes) + ")");
}

TYPEFLOW_DIST_DECL int cluster_spec::size() const noexcept { return static_cast<int>(chief.size() + worker.size() + ps.size()); }

TYPEFLOW_DIST_DECL int cluster_spec::rank_of(task_id t) const {
    const auto nc = static_cast<int>(chief.size()), nw = static_cast<int>(worker.size()),
               np = static_cast<int>(ps.size());
    switch (t.type) {
    case role::chief:
        if (t.index >= 0 && t.index < nc) return t.index;
        break;
    case role::worker:
        if (t.index >= 0 && t.index < nw) return nc + t.index;
        break;
    case role::ps:
        if (t.index >= 0 && t.index < np) return nc + nw + t.index;
        break;
    }
    throw error("task " + t.name() + " is not in the cluster");
}

TYPEFLOW_DIST_DECL int cluster_spec::rank() const { return rank_of(task); }

TYPEFLOW_DIST_DECL task_id cluster_spec::task_of(int r) const {
    const auto nc = static_cast<int>(chief.size()), nw = static_cast<int>(worker.size());
    if (r < 0 || r >= size()) throw error("rank " + std::to_string(r) + " out of range 0.." + std::to_string(size() - 1));
    if (r < nc) return {role::chief, r};
    if (r < nc + nw) return {role::worker, r - nc};
    return {role::ps, r - nc - nw};
}

TYPEFLOW_DIST_DECL const std::string& cluster_spec::address_of(int r) const {
    auto t = task_of(r);
    switch (t.type) {
    case role::chief: return chief[static_cast<std::size_t>(t.index)];
    case role::worker: return worker[static_cast<std::size_t>(t.index)];
    default: return ps[static_cast<std::size_t>(t.index)];
    }
}

TYPEFLOW_DIST_DECL std::string cluster_spec::effective_secret() const {
    if (const char* s = std::getenv("TYPEFLOW_SECRET"); s && *s) return s;
    return secret;
}

namespace detail {

TYPEFLOW_DIST_DECL const char* json_type_name(const rapidjson::Value& v) {
    if (v.IsNull()) return "null";
    if (v.IsBool()) return "a boolean";
    if (v.IsObject()) return "an object";
    if (v.IsArray()) return "an array";
    if (v.IsString()) return "a string";
    return "a number";
}

TYPEFLOW_DIST_DECL void reject_duplicate_keys(const rapidjson::Value& obj, const std::string& where) {
    std::set<std::string> seen;
    for (auto m = obj.MemberBegin(); m < obj.MemberEnd(); ++m) {
        std::string k(m->name.GetString(), m->name.GetStringLength());
        if (!seen.insert(k).second) throw error(where + ": duplicate key \"" + k + "\"");
    }
}

} // namespace detail

TYPEFLOW_DIST_DECL cluster_spec cluster_spec::parse(std::string_view json, std::string_view origin_sv) {
    using detail::json_type_name;
    const std::string origin(origin_sv);
    if (const std::size_t depth = typeflow::detail::json_nesting_depth(json);
        depth > typeflow::detail::max_json_depth)
        throw error(origin + ": JSON nested more than " + std::to_string(typeflow::detail::max_json_depth) +
                    " levels deep (a cluster spec needs 3)");
    rapidjson::Document doc;
    // Integers parse exactly without flags; the full-precision mode has
    // undefined behaviour on a zero with an exponent ("0e50",
    // Tencent/rapidjson#1249, fixed after the 1.1.0 that Debian ships). The
    // flags are spelled out: Cereal's JSON archive redefines RapidJSON's
    // default flags (full precision, NaN and Infinity) in any translation
    // unit that includes it first.
    doc.Parse<rapidjson::kParseNoFlags>(json.data(), json.size());
    if (doc.HasParseError()) {
        std::size_t off = doc.GetErrorOffset(), line = 1, col = 1;
        for (std::size_t i = 0; i < off && i < json.size(); ++i) {
            if (json[i] == '\n') { ++line; col = 1; } else ++col;
        }
        throw error(origin + ": invalid JSON at line " + std::to_string(line) + " column " + std::to_string(col) + ": " +
                    rapidjson::GetParseError_En(doc.GetParseError()));
    }
    if (!doc.IsObject()) throw error(origin + ": expected a JSON object, got " + json_type_name(doc));
    detail::reject_duplicate_keys(doc, origin);

    cluster_spec spec;
    bool have_cluster = false, have_task = false;
    for (auto m = doc.MemberBegin(); m < doc.MemberEnd(); ++m) {
        std::string key(m->name.GetString(), m->name.GetStringLength());
        const auto& v = m->value;
        if (key == "cluster") {
            have_cluster = true;
            if (!v.IsObject()) throw error(origin + ": \"cluster\" must be an object, got " + json_type_name(v));
            detail::reject_duplicate_keys(v, origin + ": cluster");
            for (auto r = v.MemberBegin(); r < v.MemberEnd(); ++r) {
                std::string rname(r->name.GetString(), r->name.GetStringLength());
                std::vector<std::string>* list = rname == "chief"    ? &spec.chief
                                                 : rname == "worker" ? &spec.worker
                                                 : rname == "ps"     ? &spec.ps
                                                                     : nullptr;
                const std::string where = origin + ": cluster." + rname;
                if (!list) throw error(where + ": unknown role (expected chief, worker or ps)");
                if (!r->value.IsArray())
                    throw error(where + ": must be an array of \"host:port\" strings, got " + json_type_name(r->value));
                for (rapidjson::SizeType i = 0; i < r->value.Size(); ++i) {
                    const auto& a = r->value[i];
                    const std::string w = where + "[" + std::to_string(i) + "]";
                    if (!a.IsString()) throw error(w + ": must be a \"host:port\" string, got " + json_type_name(a));
                    std::string addr(a.GetString(), a.GetStringLength());
                    if (addr != unknown_address) split_address(addr, w);
                    list->push_back(std::move(addr));
                }
            }
        } else if (key == "task") {
            have_task = true;
            if (!v.IsObject()) throw error(origin + ": \"task\" must be an object, got " + json_type_name(v));
            detail::reject_duplicate_keys(v, origin + ": task");
            bool have_type = false, have_index = false;
            for (auto t = v.MemberBegin(); t < v.MemberEnd(); ++t) {
                std::string tk(t->name.GetString(), t->name.GetStringLength());
                if (tk == "type") {
                    if (!t->value.IsString())
                        throw error(origin + ": task.type must be a string, got " + json_type_name(t->value));
                    std::string ty(t->value.GetString(), t->value.GetStringLength());
                    if (ty == "chief") spec.task.type = role::chief;
                    else if (ty == "worker") spec.task.type = role::worker;
                    else if (ty == "ps") spec.task.type = role::ps;
                    else throw error(origin + ": task.type \"" + ty + "\" is not chief, worker or ps");
                    have_type = true;
                } else if (tk == "index") {
                    if (!t->value.IsInt() || t->value.GetInt() < 0)
                        throw error(origin + ": task.index must be a non-negative integer");
                    spec.task.index = t->value.GetInt();
                    have_index = true;
                } else {
                    throw error(origin + ": task: unknown key \"" + tk + "\" (expected type, index)");
                }
            }
            if (!have_type) throw error(origin + ": task.type is missing");
            if (!have_index) throw error(origin + ": task.index is missing");
        } else if (key == "secret") {
            if (!v.IsString()) throw error(origin + ": \"secret\" must be a string, got " + json_type_name(v));
            spec.secret.assign(v.GetString(), v.GetStringLength());
        } else if (key == "options") {
            if (!v.IsObject()) throw error(origin + ": \"options\" must be an object, got " + json_type_name(v));
            detail::reject_duplicate_keys(v, origin + ": options");
            for (auto o = v.MemberBegin(); o < v.MemberEnd(); ++o) {
                std::string ok(o->name.GetString(), o->name.GetStringLength());
                auto& opt = spec.options;
                if (ok == "adaptive_spin") {
                    if (!o->value.IsBool()) throw error(origin + ": options.adaptive_spin must be true or false");
                    opt.adaptive_spin = o->value.GetBool();
                    continue;
                }
                const detail::option_field* f = detail::find_option(ok);
                if (!f || ok != f->key) throw error(origin + ": options: unknown key \"" + ok + "\"");
                // Every other option is an integer within its range (see
                // transport_options), checked before it is converted.
                const auto& val = o->value;
                const std::string name = "options." + ok;
                if (!val.IsNumber())
                    throw error(origin + ": " + name + " must be an integer in " + detail::range_string(*f) + ", got " +
                                json_type_name(val));
                std::uint64_t n = 0;
                if (val.IsUint64()) {
                    n = val.GetUint64();
                    detail::check_option(origin, name, *f, n);
                } else if (val.IsInt64()) { // negative
                    detail::check_option(origin, name, *f, val.GetInt64());
                } else { // a fraction, an exponent, or beyond 64 bits
                    const double d = val.GetDouble();
                    char shown[32];
                    std::snprintf(shown, sizeof shown, "%.17g", d);
                    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) >= 9.2e18)
                        throw error(origin + ": " + name + " is " + shown + ", outside the allowed range " +
                                    detail::range_string(*f));
                    throw error(origin + ": " + name + " must be an integer in " + detail::range_string(*f) + ", got " +
                                shown + (std::isfinite(d) && std::floor(d) == d ? " (written with a fraction or exponent)" : ""));
                }
                // In range: converts without overflow.
                const auto i = static_cast<std::int64_t>(n);
                if (ok == "heartbeat_timeout_ms") opt.heartbeat_timeout = std::chrono::milliseconds(i);
                else if (ok == "connect_timeout_ms") opt.connect_timeout = std::chrono::milliseconds(i);
                else if (ok == "handshake_timeout_ms") opt.handshake_timeout = std::chrono::milliseconds(i);
                else if (ok == "op_timeout_ms") opt.op_timeout = std::chrono::milliseconds(i);
                else if (ok == "spin_wait_us") opt.spin_wait = std::chrono::microseconds(i);
                else if (ok == "max_frame_bytes") opt.max_frame_bytes = static_cast<std::size_t>(n);
                else if (ok == "segment_bytes") opt.segment_bytes = static_cast<std::size_t>(n);
                else if (ok == "max_unexpected_bytes") opt.max_unexpected_bytes = static_cast<std::size_t>(n);
                else if (ok == "caller_read_bytes") opt.caller_read_bytes = static_cast<std::size_t>(n);
                else if (ok == "send_thread_bytes") opt.send_thread_bytes = static_cast<std::size_t>(n);
            }
            if (spec.options.segment_bytes > spec.options.max_frame_bytes)
                throw error(origin + ": options.segment_bytes exceeds options.max_frame_bytes (" +
                            std::to_string(spec.options.segment_bytes) + " > " +
                            std::to_string(spec.options.max_frame_bytes) + ")");
        } else if (key == "environment") {
            // TF_CONFIG compatibility; ignored.
        } else {
            throw error(origin + ": unknown key \"" + key + "\" (expected cluster, task, secret, options)");
        }
    }
    if (!have_cluster) throw error(origin + ": \"cluster\" is missing");
    if (!have_task) throw error(origin + ": \"task\" is missing");
    if (spec.size() == 0) throw error(origin + ": the cluster has no tasks");
    if (spec.chief.size() > 1) throw error(origin + ": cluster.chief has " + std::to_string(spec.chief.size()) + " entries; at most one");
    if (spec.chief.empty() && spec.worker.empty()) throw error(origin + ": the cluster needs a chief or at least one worker");
    // One task per endpoint, however its address is spelled
    // ("localhost:5000", "127.0.0.1:05000"; see canonical_address).
    auto field = [&](int r) {
        const auto t = spec.task_of(r);
        return "cluster." + std::string(name_of(t.type)) + "[" + std::to_string(t.index) + "]";
    };
    if (spec.address_of(0) == unknown_address)
        throw error(origin + ": " + field(0) + " is \"*\", but the chief's address must be given: every task joins there (\"*\" is for the others, which report theirs when they join)");
    std::map<std::string, int> endpoints; // canonical address -> rank
    for (int r = 0; r < spec.size(); ++r) {
        if (spec.address_of(r) == unknown_address) continue;
        auto [it, fresh] = endpoints.emplace(canonical_address(spec.address_of(r), origin + ": " + field(r)), r);
        if (!fresh) {
            const int q = it->second;
            throw error(origin + ": address " + it->first + " is used by two tasks: " + spec.task_of(q).name() + " (" +
                        field(q) + " \"" + spec.address_of(q) + "\") and " + spec.task_of(r).name() + " (" + field(r) +
                        " \"" + spec.address_of(r) + "\")");
        }
    }
    const auto count = spec.task.type == role::chief ? spec.chief.size()
                       : spec.task.type == role::worker ? spec.worker.size()
                                                        : spec.ps.size();
    if (static_cast<std::size_t>(spec.task.index) >= count)
        throw error(origin + ": task " + spec.task.name() + " is not in the cluster (cluster." +
                    std::string(name_of(spec.task.type)) + " has " + std::to_string(count) + " entries)");
    return spec;
}

TYPEFLOW_DIST_DECL cluster_spec cluster_spec::from_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw error("cannot open cluster spec file \"" + path + "\"");
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse(ss.str(), path);
}

TYPEFLOW_DIST_DECL cluster_spec cluster_spec::from_env() {
    if (const char* s = std::getenv("TYPEFLOW_CONFIG"); s && *s) return parse(s, "TYPEFLOW_CONFIG");
    if (const char* f = std::getenv("TYPEFLOW_CONFIG_FILE"); f && *f) return from_file(f);
    // mpirun first: inside a Slurm allocation its tasks inherit SLURM_PROCID
    if (const char* r = std::getenv("OMPI_COMM_WORLD_RANK"); r && *r) return from_mpi([](const char* k) { return std::getenv(k); });
    if (const char* r = std::getenv("SLURM_PROCID"); r && *r) return from_slurm([](const char* k) { return std::getenv(k); });
    throw error("no cluster spec: set TYPEFLOW_CONFIG (JSON) or TYPEFLOW_CONFIG_FILE (path), or start the tasks "
                "with Open MPI's mpirun (and MASTER_ADDR, MASTER_PORT) or Slurm's srun");
}

namespace detail {
// A non-negative decimal integer spelled entirely by `s`, at most `max`; -1 otherwise.
TYPEFLOW_DIST_DECL long long parse_count(std::string_view s, long long max) {
    if (s.empty() || s.size() > 18) return -1;
    long long v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    return v <= max ? v : -1;
}
// Splits at commas outside brackets.
TYPEFLOW_DIST_DECL std::vector<std::string_view> split_top(std::string_view s, std::string_view what) {
    std::vector<std::string_view> out;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '[' && ++depth > 1) throw error(std::string(what) + ": nested '[' in \"" + std::string(s) + "\"");
        if (s[i] == ']' && --depth < 0) throw error(std::string(what) + ": unbalanced ']' in \"" + std::string(s) + "\"");
        if (s[i] == ',' && depth == 0) {
            out.push_back(s.substr(start, i - start));
            start = i + 1;
        }
    }
    if (depth != 0) throw error(std::string(what) + ": unbalanced '[' in \"" + std::string(s) + "\"");
    out.push_back(s.substr(start));
    return out;
}
// Appends every expansion of one name (its bracket groups in turn) to `out`.
TYPEFLOW_DIST_DECL void expand_name(std::string_view name, const std::string& prefix, std::vector<std::string>& out,
                                    std::string_view list) {
    const std::size_t open = name.find('[');
    if (open == std::string_view::npos) {
        out.push_back(prefix + std::string(name));
        return;
    }
    const std::size_t close = name.find(']', open);
    const std::string head = prefix + std::string(name.substr(0, open));
    const std::string_view rest = name.substr(close + 1);
    auto bad = [&](const char* why) {
        return error("SLURM node list \"" + std::string(list) + "\": " + why + " in \"" + std::string(name) + "\"");
    };
    for (std::string_view item : split_top(name.substr(open + 1, close - open - 1), "SLURM node list")) {
        const std::size_t dash = item.find('-');
        const std::string_view lo = item.substr(0, dash), hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
        const long long a = parse_count(lo, 999999999), b = parse_count(hi, 999999999);
        if (a < 0 || b < 0) throw bad("a range that is not N or N-M");
        if (b < a) throw bad("a descending range");
        if (b - a >= 65536 || out.size() + static_cast<std::size_t>(b - a) >= 65536) throw bad("more than 65536 hosts");
        const std::size_t width = lo.size();  // zero padding, as Slurm keeps it
        for (long long v = a; v <= b; ++v) {
            std::string digits = std::to_string(v);
            if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
            expand_name(rest, head + digits, out, list);
        }
    }
}
}  // namespace detail

TYPEFLOW_DIST_DECL std::vector<std::string> expand_slurm_nodelist(std::string_view list) {
    std::vector<std::string> out;
    if (list.empty()) throw error("SLURM node list is empty");
    for (std::string_view name : detail::split_top(list, "SLURM node list")) {
        if (name.empty() || name.front() == '[')
            throw error("SLURM node list \"" + std::string(list) + "\": an empty host name");
        detail::expand_name(name, "", out, list);
    }
    return out;
}

TYPEFLOW_DIST_DECL std::vector<int> expand_slurm_tasks_per_node(std::string_view counts) {
    std::vector<int> out;
    auto bad = [&] { return error("SLURM tasks per node \"" + std::string(counts) + "\": expected N or N(xM), comma-separated"); };
    std::size_t start = 0;
    while (start <= counts.size()) {
        const std::size_t comma = std::min(counts.find(',', start), counts.size());
        std::string_view item = counts.substr(start, comma - start);
        long long times = 1;
        if (const std::size_t p = item.find("(x"); p != std::string_view::npos) {
            if (item.back() != ')') throw bad();
            times = detail::parse_count(item.substr(p + 2, item.size() - p - 3), 65536);
            item = item.substr(0, p);
        }
        const long long n = detail::parse_count(item, 65536);
        if (n < 0 || times < 1) throw bad();
        if (out.size() + static_cast<std::size_t>(times) > 65536) throw bad();
        out.insert(out.end(), static_cast<std::size_t>(times), static_cast<int>(n));
        start = comma + 1;
    }
    return out;
}

TYPEFLOW_DIST_DECL cluster_spec cluster_spec::from_slurm(const std::function<const char*(const char*)>& env) {
    auto need = [&](const char* k) -> std::string {
        const char* v = env(k);
        if (!v || !*v) throw error(std::string("Slurm environment: ") + k + " is not set");
        return v;
    };
    auto first_of = [&](const char* a, const char* b) -> std::pair<std::string, const char*> {
        if (const char* v = env(a); v && *v) return {v, a};
        return {need(b), b};
    };
    auto count = [&](const char* k, long long max) {
        const std::string v = need(k);
        const long long n = detail::parse_count(v, max);
        if (n < 0) throw error(std::string("Slurm environment: ") + k + " is \"" + v + "\", not a number in 0.." + std::to_string(max));
        return static_cast<int>(n);
    };
    const int ntasks = count("SLURM_NTASKS", 65536), rank = count("SLURM_PROCID", 65535);
    if (ntasks < 1 || rank >= ntasks)
        throw error("Slurm environment: SLURM_PROCID " + std::to_string(rank) + " is not below SLURM_NTASKS " +
                    std::to_string(ntasks));
    const auto [nodelist, nodes_var] = first_of("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST");
    const auto [per_node, per_node_var] = first_of("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE");
    const std::vector<std::string> hosts = expand_slurm_nodelist(nodelist);
    const std::vector<int> per = expand_slurm_tasks_per_node(per_node);
    if (per.size() != hosts.size())
        throw error(std::string("Slurm environment: ") + per_node_var + " \"" + per_node + "\" gives " +
                    std::to_string(per.size()) + " hosts, " + nodes_var + " \"" + nodelist + "\" " +
                    std::to_string(hosts.size()));
    long long total = 0;
    for (int n : per) total += n;
    if (total != ntasks)
        throw error(std::string("Slurm environment: ") + per_node_var + " \"" + per_node + "\" places " +
                    std::to_string(total) + " tasks, SLURM_NTASKS is " + std::to_string(ntasks));
    int base = 29500;
    if (const char* p = env("TYPEFLOW_PORT"); p && *p) {
        const long long v = detail::parse_count(p, 65535);
        if (v < 1) throw error(std::string("Slurm environment: TYPEFLOW_PORT is \"") + p + "\", not a port 1..65535");
        base = static_cast<int>(v);
    }
    std::string dist = "block";
    if (const char* d = env("SLURM_DISTRIBUTION"); d && *d) dist = std::string(d).substr(0, std::string(d).find(':'));
    if (dist != "block" && dist != "cyclic")
        throw error("Slurm environment: SLURM_DISTRIBUTION \"" + std::string(env("SLURM_DISTRIBUTION")) +
                    "\": only block and cyclic placements are supported");
    // the host of each rank, and its index among the tasks on that host
    std::vector<std::size_t> host_of(static_cast<std::size_t>(ntasks));
    std::vector<int> used(hosts.size(), 0);
    if (dist == "block") {
        std::size_t r = 0;
        for (std::size_t h = 0; h < hosts.size(); ++h)
            for (int k = 0; k < per[h]; ++k) host_of[r++] = h;
    } else {
        std::size_t r = 0;
        while (r < host_of.size())
            for (std::size_t h = 0; h < hosts.size() && r < host_of.size(); ++h)
                if (used[h] < per[h]) host_of[r++] = h, ++used[h];
        std::fill(used.begin(), used.end(), 0);
    }
    cluster_spec spec;
    for (std::size_t r = 0; r < host_of.size(); ++r) {
        const int port = base + used[host_of[r]]++;
        if (port > 65535) throw error("Slurm environment: TYPEFLOW_PORT " + std::to_string(base) + " + " +
                                      std::to_string(used[host_of[r]] - 1) + " is past port 65535");
        spec.worker.push_back(hosts[host_of[r]] + ":" + std::to_string(port));
    }
    spec.task = task_id{role::worker, rank};
    // through the JSON reader, so that the spec gets every check a file gets
    return parse(spec.to_json(), "Slurm environment");
}

TYPEFLOW_DIST_DECL cluster_spec cluster_spec::from_mpi(const std::function<const char*(const char*)>& env) {
    auto need = [&](const char* k, const char* why) -> std::string {
        const char* v = env(k);
        if (!v || !*v) throw error(std::string("Open MPI environment: ") + k + " is not set" + why);
        return v;
    };
    auto count = [&](const char* k, long long max) {
        const std::string v = need(k, "");
        const long long n = detail::parse_count(v, max);
        if (n < 0)
            throw error(std::string("Open MPI environment: ") + k + " is \"" + v + "\", not a number in 0.." + std::to_string(max));
        return static_cast<int>(n);
    };
    const int size = count("OMPI_COMM_WORLD_SIZE", 65536), rank = count("OMPI_COMM_WORLD_RANK", 65535);
    if (size < 1 || rank >= size)
        throw error("Open MPI environment: OMPI_COMM_WORLD_RANK " + std::to_string(rank) + " is not below OMPI_COMM_WORLD_SIZE " +
                    std::to_string(size));
    const char* where = " (rank 0 listens on MASTER_ADDR:MASTER_PORT and the others join it there; pass them with "
                        "mpirun -x MASTER_ADDR=<host of rank 0> -x MASTER_PORT=<port>)";
    const std::string host = need("MASTER_ADDR", where);
    const std::string port = need("MASTER_PORT", where);
    const long long p = detail::parse_count(port, 65535);
    if (p < 1) throw error("Open MPI environment: MASTER_PORT is \"" + port + "\", not a port 1..65535");
    cluster_spec spec;
    spec.worker.assign(static_cast<std::size_t>(size), std::string(unknown_address));
    spec.worker[0] = (host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host) + ":" +
                     std::to_string(p);
    spec.task = task_id{role::worker, rank};
    return parse(spec.to_json(), "Open MPI environment");
}

TYPEFLOW_DIST_DECL std::string cluster_spec::to_json() const {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.StartObject();
    w.Key("cluster");
    w.StartObject();
    auto list = [&](const char* k, const std::vector<std::string>& v) {
        if (v.empty()) return;
        w.Key(k);
        w.StartArray();
        for (auto& a : v) w.String(a.c_str(), static_cast<rapidjson::SizeType>(a.size()));
        w.EndArray();
    };
    list("chief", chief);
    list("worker", worker);
    list("ps", ps);
    w.EndObject();
    w.Key("task");
    w.StartObject();
    w.Key("type");
    w.String(std::string(name_of(task.type)).c_str());
    w.Key("index");
    w.Int(task.index);
    w.EndObject();
    w.EndObject();
    return buf.GetString();
}

} // namespace typeflow::dist

#pragma once
// JSON is read with RapidJSON (header-only, strict RFC 8259 parser that
// reports the error offset; Debian's libcereal-dev already depends on it).
// Member iterators are compared with < because C++20 makes their != ambiguous.

#include <typeflow/distributed/cluster_spec.hpp>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

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
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return fail("port is not a number");
    unsigned long p = std::stoul(std::string(port));
    if (p < 1 || p > 65535) return fail("port out of range 1..65535");
    return {std::string(host), static_cast<unsigned short>(p)};
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
    rapidjson::Document doc;
    doc.Parse<rapidjson::kParseFullPrecisionFlag>(json.data(), json.size());
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
                    split_address(addr, w);
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
                if (!o->value.IsInt64() || o->value.GetInt64() <= 0)
                    throw error(origin + ": options." + ok + " must be a positive integer");
                const auto n = o->value.GetInt64();
                if (ok == "heartbeat_timeout_ms") opt.heartbeat_timeout = std::chrono::milliseconds(n);
                else if (ok == "connect_timeout_ms") opt.connect_timeout = std::chrono::milliseconds(n);
                else if (ok == "handshake_timeout_ms") opt.handshake_timeout = std::chrono::milliseconds(n);
                else if (ok == "op_timeout_ms") opt.op_timeout = std::chrono::milliseconds(n);
                else if (ok == "max_frame_bytes") opt.max_frame_bytes = static_cast<std::size_t>(n);
                else if (ok == "segment_bytes") opt.segment_bytes = static_cast<std::size_t>(n);
                else if (ok == "max_unexpected_bytes") opt.max_unexpected_bytes = static_cast<std::size_t>(n);
                else if (ok == "caller_read_bytes") opt.caller_read_bytes = static_cast<std::size_t>(n);
                else if (ok == "send_thread_bytes") opt.send_thread_bytes = static_cast<std::size_t>(n);
                else if (ok == "spin_wait_us") opt.spin_wait = std::chrono::microseconds(n);
                else throw error(origin + ": options: unknown key \"" + ok + "\"");
            }
            if (spec.options.segment_bytes > spec.options.max_frame_bytes)
                throw error(origin + ": options.segment_bytes exceeds options.max_frame_bytes");
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
    std::set<std::string> addrs;
    for (int r = 0; r < spec.size(); ++r)
        if (!addrs.insert(spec.address_of(r)).second)
            throw error(origin + ": address " + spec.address_of(r) + " is used by two tasks (second: " +
                        spec.task_of(r).name() + ")");
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
    throw error("no cluster spec: set TYPEFLOW_CONFIG (JSON) or TYPEFLOW_CONFIG_FILE (path)");
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

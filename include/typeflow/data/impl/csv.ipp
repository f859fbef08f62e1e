// typeflow/data/impl/csv.ipp — the CSV reader's plain code (see data/csv.hpp): inline in
// header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION (typeflow/src.hpp).
#pragma once
#include <charconv>
#include <system_error>

#include <typeflow/data/csv.hpp>

namespace typeflow::data::detail {

TYPEFLOW_DECL std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
}

TYPEFLOW_DECL void split_fields(std::string_view line, char delim, std::vector<std::string_view>& out) {
    out.clear();
    for (;;) {
        const std::size_t k = line.find(delim);
        out.push_back(trim(line.substr(0, k)));
        if (k == std::string_view::npos) return;
        line.remove_prefix(k + 1);
    }
}

namespace csv_impl {
template <class T>
bool parse(std::string_view s, T& v) {
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    if (s.empty()) return false;
    const char* end = s.data() + s.size();
    const auto r = std::from_chars(s.data(), end, v);
    return r.ec == std::errc() && r.ptr == end;
}
}  // namespace csv_impl

TYPEFLOW_DECL bool parse_number(std::string_view s, float& v) { return csv_impl::parse(s, v); }
TYPEFLOW_DECL bool parse_number(std::string_view s, double& v) { return csv_impl::parse(s, v); }
TYPEFLOW_DECL bool parse_number(std::string_view s, std::int32_t& v) { return csv_impl::parse(s, v); }
TYPEFLOW_DECL bool parse_number(std::string_view s, std::int64_t& v) { return csv_impl::parse(s, v); }
TYPEFLOW_DECL bool parse_number(std::string_view s, bool& v) {
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    if (s.empty()) return false;
    const bool t = s == "true" || s == "1";
    if (!t && s != "false" && s != "0") return false;
    v = t;
    return true;
}

}  // namespace typeflow::data::detail

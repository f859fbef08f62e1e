// typeflow/core/json_depth.hpp — the nesting depth of JSON text, measured
// before it is parsed: RapidJSON's parser and its document recurse once per
// level, so a small file nested hundreds of thousands of levels deep would
// overflow the stack. Readers of JSON refuse text deeper than
// max_json_depth with an error instead.
#pragma once
#include <cstddef>
#include <string_view>

namespace typeflow::detail {

/// The deepest nesting of JSON text that typeflow's readers accept.
inline constexpr std::size_t max_json_depth = 64;

/// The largest number of arrays and objects open at one point of `text`
/// (brackets inside strings do not count); stops counting past `limit`.
constexpr std::size_t json_nesting_depth(std::string_view text, std::size_t limit = max_json_depth) noexcept {
    std::size_t depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') {
            if (++depth > deepest && (deepest = depth) > limit) return deepest;
        } else if ((c == ']' || c == '}') && depth > 0) --depth;
    }
    return deepest;
}

static_assert(json_nesting_depth(R"({"a": [1, {"b": "[[["}]})") == 3);

}  // namespace typeflow::detail

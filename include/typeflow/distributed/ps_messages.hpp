#pragma once
// typeflow::dist::detail — the checks a parameter server applies to what a
// worker sends it (parameter_server.hpp), free of the ps itself so that the
// fuzz target (tests/fuzz/fuzz_ps.cpp) runs them on arbitrary input: a
// request (kind, model fingerprint, one row count per embedding-table shard
// of this ps), the row ids a request announced, and a push's head
// (examples, loss times examples, step). Each returns "" when the message
// is good, else why it is refused (to follow the sender's name).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace typeflow::dist::detail {

/// What a worker asks of the ps tasks.
enum class ps_request : std::int64_t { done = 0, step = 1, pull = 2 };

/// The rows [begin, end) of a table that one shard holds.
struct ps_rows {
    std::int64_t begin = 0, end = 0;
};

/// 16 hex digits.
inline std::string ps_hex(std::uint64_t v) {
    char b[19];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
    return b;
}

/// Request `req` = {kind, fingerprint, rows of table shard 0, 1, ...} (one
/// count per entry of `tables`, the sparse shards of this ps in order): the
/// fingerprint must be this model's, the kind known, and each count 0 for
/// done, -1 for pull, and 0 to the shard's rows for a step. When good, sets
/// `kind` and `at` (table k's ids are at[k] to at[k + 1] in the ids message).
/// `me` names this ps.
inline std::string ps_check_request(std::span<const std::int64_t> req, std::uint64_t fingerprint, std::span<const ps_rows> tables,
                                    const std::string& me, ps_request& kind, std::vector<std::size_t>& at) {
    if (req.size() != 2 + tables.size())
        return " sent a request of " + std::to_string(req.size()) + " numbers, not " + std::to_string(2 + tables.size());
    const auto fp = static_cast<std::uint64_t>(req[1]);
    if (fp != fingerprint)
        return " runs a different model: fingerprint " + ps_hex(fp) + ", this ps (" + me + ") has " + ps_hex(fingerprint);
    const auto k = static_cast<ps_request>(req[0]);
    if (k != ps_request::step && k != ps_request::pull && k != ps_request::done)
        return " sent an unknown request " + std::to_string(req[0]);
    std::vector<std::size_t> a(1, 0);
    for (std::size_t t = 0; t < tables.size(); ++t) {
        const std::int64_t n = req[2 + t];
        const std::int64_t rows = tables[t].end - tables[t].begin;
        const bool ok = k == ps_request::done ? n == 0 : k == ps_request::pull ? n == -1 : n >= 0 && n <= rows;
        if (!ok) return " asked for " + std::to_string(n) + " rows of a shard of " + std::to_string(rows);
        a.push_back(a.back() + static_cast<std::size_t>(n < 0 ? 0 : n));
    }
    kind = k;
    at = std::move(a);
    return {};
}

/// The row ids a checked request announced (table k's at at[k] to
/// at[k + 1]): increasing, and inside their shard's rows.
inline std::string ps_check_ids(std::span<const std::int64_t> ids, std::span<const std::size_t> at, std::span<const ps_rows> tables) {
    if (at.size() != tables.size() + 1 || at.back() != ids.size())
        return " sent " + std::to_string(ids.size()) + " row ids, not the " + std::to_string(at.empty() ? 0 : at.back()) + " it announced";
    for (std::size_t t = 0; t < tables.size(); ++t) {
        std::int64_t prev = tables[t].begin - 1;
        for (std::size_t j = at[t]; j < at[t + 1]; ++j) {
            if (!(ids[j] > prev && ids[j] < tables[t].end))
                return " asked for row " + std::to_string(ids[j]) + ", not increasing or outside its shard [" +
                       std::to_string(tables[t].begin) + ", " + std::to_string(tables[t].end) + ")";
            prev = ids[j];
        }
    }
    return {};
}

/// A push's head {examples, loss * examples, step}: examples neither
/// negative nor NaN; the step one this ps (`me`, at step `step`) has given
/// out: any earlier one when `earlier_ok`, else the current one.
inline std::string ps_check_head(const double* head, std::int64_t step, bool earlier_ok, const std::string& me) {
    if (!(head[0] >= 0)) return " pushed " + std::to_string(head[0]) + " examples";
    const double s = head[2];
    if (!(s >= 0 && s <= static_cast<double>(step) && s == std::floor(s)) || (!earlier_ok && s != static_cast<double>(step)))
        return " pushed gradients of step " + std::to_string(s) + ", this ps (" + me + ") is at step " + std::to_string(step);
    return {};
}

}  // namespace typeflow::dist::detail

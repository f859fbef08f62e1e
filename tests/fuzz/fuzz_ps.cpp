// libFuzzer target: the checks a parameter server applies to what a worker
// sends (typeflow/distributed/ps_messages.hpp), fed arbitrary requests, row
// ids and push heads against arbitrary table shards. Properties: no crash or
// sanitizer report; every refusal says why; a refused request leaves the
// ps's state (kind, id offsets) untouched; and whatever is accepted obeys
// the protocol, as checked here by an independent restatement of it: the
// model's fingerprint, a known kind, row counts within the shard (0 for
// done, -1 for pull), ids strictly increasing inside their shard, and a head
// of non-negative examples with a whole step the ps has given out.
//
// Input: [tables: 1 byte] then per table [begin: int16][rows: uint8], then
// [flags: 1 byte] [fingerprint: 8 bytes unless flags & 1] [kind: int64]
// [one row count per table: int64], then row ids (int64) as the request
// announced, then [examples, loss, step: 3 doubles] [ps step: uint16].
#include <typeflow/distributed/ps_messages.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace tfd = typeflow::dist;

namespace {
struct reader {
    const std::uint8_t* p;
    const std::uint8_t* end;
    template <class T>
    T get() {  // zeros past the end
        T v{};
        const std::size_t n = std::min<std::size_t>(sizeof(T), static_cast<std::size_t>(end - p));
        std::memcpy(&v, p, n);
        p += n;
        return v;
    }
    bool empty() const { return p == end; }
};
void check(bool ok) {
    if (!ok) __builtin_trap();
}
constexpr std::uint64_t fingerprint = 0x5eed'f00d'1234'abcdULL;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    reader in{data, data + size};
    std::vector<tfd::detail::ps_rows> tables(in.get<std::uint8_t>() % 4);
    for (auto& t : tables) {
        t.begin = in.get<std::int16_t>();
        t.end = t.begin + in.get<std::uint8_t>();
    }
    const auto flags = in.get<std::uint8_t>();
    std::vector<std::int64_t> req(2 + tables.size());
    req[1] = static_cast<std::int64_t>(flags & 1 ? fingerprint : in.get<std::uint64_t>());
    req[0] = in.get<std::int64_t>();
    for (std::size_t k = 0; k < tables.size(); ++k) req[2 + k] = in.get<std::int64_t>();
    if (flags & 2) req.pop_back();  // a request of the wrong length

    auto kind = static_cast<tfd::detail::ps_request>(-7);
    std::vector<std::size_t> at{12345};
    const std::string why = tfd::detail::ps_check_request(req, fingerprint, tables, "ps:0", kind, at);
    if (!why.empty()) {
        check(static_cast<std::int64_t>(kind) == -7 && at.size() == 1 && at[0] == 12345);
    } else {
        check(req.size() == 2 + tables.size() && static_cast<std::uint64_t>(req[1]) == fingerprint);
        check(req[0] >= 0 && req[0] <= 2 && static_cast<std::int64_t>(kind) == req[0]);
        check(at.size() == tables.size() + 1 && at[0] == 0);
        for (std::size_t k = 0; k < tables.size(); ++k) {
            const std::int64_t n = req[2 + k], rows = tables[k].end - tables[k].begin;
            if (kind == tfd::detail::ps_request::done) check(n == 0);
            else if (kind == tfd::detail::ps_request::pull) check(n == -1);
            else check(n >= 0 && n <= rows);
            check(at[k + 1] - at[k] == static_cast<std::size_t>(n < 0 ? 0 : n));
        }
        // the ids it announced (as many as the input holds, the rest zeros;
        // with flags & 4 one more than announced)
        std::vector<std::int64_t> ids(at.back() + (flags & 4 ? 1 : 0));
        for (auto& id : ids) id = in.get<std::int64_t>();
        const std::string bad = tfd::detail::ps_check_ids(ids, at, tables);
        bool ok = ids.size() == at.back();
        for (std::size_t k = 0; ok && k < tables.size(); ++k)
            for (std::size_t j = at[k]; j < at[k + 1]; ++j)
                ok = ok && ids[j] >= tables[k].begin && ids[j] < tables[k].end && (j == at[k] || ids[j] > ids[j - 1]);
        check(bad.empty() == ok);
    }

    double head[3];
    for (double& h : head) h = in.get<double>();
    const std::int64_t step = in.get<std::uint16_t>();
    const bool earlier_ok = flags & 8;
    const std::string refused = tfd::detail::ps_check_head(head, step, earlier_ok, "ps:0");
    const bool whole = std::isfinite(head[2]) && head[2] == std::floor(head[2]) && head[2] >= 0 && head[2] <= static_cast<double>(step);
    const bool good = !std::isnan(head[0]) && head[0] >= 0 && whole && (earlier_ok || head[2] == static_cast<double>(step));
    check(refused.empty() == good);
    return 0;
}

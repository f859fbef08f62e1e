// libFuzzer target: the cluster-spec parser (TF_CONFIG JSON) fed arbitrary
// text. Properties: no crash or sanitizer report; every failure is a
// typeflow::error; a spec that parses has at least one task and parses
// again from the same text to the same task count.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <typeflow/distributed/cluster_spec.hpp>

namespace tfd = typeflow::dist;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const tfd::cluster_spec a = tfd::cluster_spec::parse(text, "fuzz input");
        const tfd::cluster_spec b = tfd::cluster_spec::parse(text, "fuzz input");
        if (a.size() == 0 || a.size() != b.size()) __builtin_trap();
    } catch (const typeflow::error&) {
    }
    return 0;
}

// libFuzzer target: the checkpoint reader (binary and JSON formats, data
// files and sharded indexes) fed arbitrary files. Properties: no crash or
// sanitizer report; every failure is a typeflow::error; a file that reads
// successfully describes tensors whose byte counts are their element counts
// times their dtype's size, and whose bytes pass their checksums.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <typeflow/io/checkpoint.hpp>

#include "fuzz_util.hpp"

namespace tf = typeflow;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = fuzz::write_input(data, size, ".tfckpt");
    try {
        tf::io::checkpoint_reader r(path);
        for (const tf::io::tensor_info& t : r.tensors()) {
            // the reader's own bookkeeping must agree with the extents it accepted
            const std::uint64_t n = static_cast<std::uint64_t>(t.shape.numel());
            if (t.shape.numel() < 0 || n * tf::dtype_size(t.dtype) != t.bytes || (n && t.bytes / n != tf::dtype_size(t.dtype)))
                __builtin_trap();
        }
        if (r.is_index()) return 0;
        std::vector<std::vector<std::byte>> bufs(r.tensors().size());
        r.read([&](std::size_t i) -> std::byte* {
            const std::uint64_t b = r.tensors()[i].bytes;
            if (b > (std::uint64_t{1} << 26)) return nullptr;  // larger than the input can justify: skip
            bufs[i].resize(static_cast<std::size_t>(b));
            return bufs[i].data();
        });
    } catch (const tf::error&) {
        // a clear error is the expected outcome for most inputs
    }
    return 0;
}

// libFuzzer target: the TensorBoard event-file reader fed arbitrary files.
// Properties: no crash or sanitizer report; every failure is a
// typeflow::error; the events it returns re-encode without error.
#include <cstddef>
#include <cstdint>

#include <typeflow/io/events.hpp>

#include "fuzz_util.hpp"

namespace tf = typeflow;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = fuzz::write_input(data, size, ".tfevents");
    try {
        for (const tf::io::event& e : tf::io::read_events(path)) (void)tf::io::encode_event(e);
    } catch (const tf::error&) {
    }
    return 0;
}

// typeflow::io through an installed package (find_package(typeflow COMPONENTS io)):
// saves a variable to a checkpoint and restores it into a fresh one.
#include <cstdio>
#include <filesystem>

#include <typeflow/io.hpp>
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main() {
    const auto dir = std::filesystem::current_path() / "consumer_io_ckpt";
    std::filesystem::remove_all(dir);
    tf::variable<"W", float, tf::shape<2, 3>> W{tf::init::constant{1.5}};
    const std::string path = tf::io::saver(W).save(dir.string(), 7);

    tf::variable<"W", float, tf::shape<2, 3>> restored{tf::init::zeros{}};
    tf::io::saver(restored).restore(path);
    bool ok = restored.value().size() == 6;
    for (long i = 0; i < restored.value().size(); ++i) ok = ok && restored.value()[i] == 1.5f;
    std::printf("consumer_io: %s -> W[0] = %g %s\n", path.c_str(), restored.value()[0], ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}

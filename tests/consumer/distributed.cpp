// typeflow::distributed through an installed package (find_package(typeflow
// COMPONENTS distributed)): parses a cluster spec (RapidJSON), runs an
// all_reduce on a one-task cluster (Asio transport, no network needed) and
// makes a handshake nonce (OpenSSL libcrypto).
#include <cstdio>

#include <typeflow/dist.hpp>

namespace tfd = typeflow::dist;

int main() {
    const auto spec = tfd::cluster_spec::parse(
        R"({"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}})", "consumer");
    bool ok = spec.size() == 1 && spec.rank() == 0 && spec.task.name() == "worker:0";

    tfd::ring_collective comm(spec);
    const float in[3] = {1, 2, 3};
    float out[3] = {};
    comm.all_reduce(in, out, 3, tfd::dtype::float32, tfd::reduce_op::sum);
    ok = ok && comm.size() == 1 && out[0] == 1 && out[1] == 2 && out[2] == 3;

    const auto a = tfd::handshake::make_nonce(), b = tfd::handshake::make_nonce();
    ok = ok && a != b;
    std::printf("consumer_distributed: %s, all_reduce -> [%g %g %g] %s\n", spec.to_json().c_str(), out[0], out[1],
                out[2], ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}

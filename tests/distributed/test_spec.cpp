// Cluster spec parsing: ranks, roles, and one clear error per malformed input.
#include <typeflow/distributed/cluster_spec.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace typeflow::dist;
using Catch::Matchers::Contains;

namespace {
const char* good = R"({"cluster": {"chief": ["127.0.0.1:5000"], "worker": ["127.0.0.1:5001", "localhost:5002"],
                        "ps": ["[::1]:5003"]},
                       "task": {"type": "worker", "index": 1}, "secret": "s3", "environment": "cloud",
                       "options": {"heartbeat_timeout_ms": 1500, "segment_bytes": 1024}})";

std::string parse_error(const std::string& json) {
    try {
        cluster_spec::parse(json, "SPEC");
    } catch (const error& e) {
        return e.what();
    }
    return "<no error>";
}
} // namespace

TEST_CASE("a well-formed spec gives ranks chief, workers, ps") {
    auto s = cluster_spec::parse(good);
    CHECK(s.size() == 4);
    CHECK(s.rank() == 2);
    CHECK(s.task.name() == "worker:1");
    CHECK(s.task_of(0).name() == "chief:0");
    CHECK(s.task_of(3).name() == "ps:0");
    CHECK(s.rank_of({role::ps, 0}) == 3);
    CHECK(s.address_of(2) == "localhost:5002");
    CHECK(s.secret == "s3");
    CHECK(s.options.heartbeat_timeout == std::chrono::milliseconds(1500));
    CHECK(s.options.segment_bytes == 1024);
    CHECK(s.options.adaptive_spin); // the default
    CHECK(s.options.spin_wait == std::chrono::microseconds(100));
    auto f = cluster_spec::parse(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0},
                                     "options": {"adaptive_spin": false, "spin_wait_us": 7}})");
    CHECK_FALSE(f.options.adaptive_spin);
    CHECK(f.options.spin_wait == std::chrono::microseconds(7));
    CHECK(split_address("[::1]:5003", "x") == std::pair<std::string, unsigned short>{"::1", 5003});
    CHECK_THROWS_WITH(s.task_of(4), Contains("rank 4 out of range"));
    CHECK_THROWS_WITH(s.rank_of({role::ps, 1}), Contains("ps:1 is not in the cluster"));
}

TEST_CASE("round trip through to_json") {
    auto s = cluster_spec::parse(good);
    auto t = cluster_spec::parse(s.to_json());
    CHECK(t.chief == s.chief);
    CHECK(t.worker == s.worker);
    CHECK(t.ps == s.ps);
    CHECK(t.task == s.task);
}

TEST_CASE("without a chief, worker 0 is rank 0") {
    auto s = cluster_spec::parse(R"({"cluster": {"worker": ["h:1", "h:2"]}, "task": {"type": "worker", "index": 0}})");
    CHECK(s.rank() == 0);
    CHECK(s.size() == 2);
}

TEST_CASE("malformed specs give errors naming the source and field") {
    struct C { const char* json; const char* message; };
    const C cases[] = {
        {"", "SPEC: invalid JSON at line 1 column 1"},
        {"{\"cluster\": {\"worker\": [\"h:1\"]},\n \"task\": {\"type\": \"worker\" \"index\": 0}}", "invalid JSON at line 2 column 28"},
        {"{} x", "invalid JSON"},
        {"[]", "expected a JSON object, got an array"},
        {R"({"task": {"type": "worker", "index": 0}})", "\"cluster\" is missing"},
        {R"({"cluster": {"worker": ["h:1"]}})", "\"task\" is missing"},
        {R"({"cluster": [], "task": {"type": "worker", "index": 0}})", "\"cluster\" must be an object, got an array"},
        {R"({"cluster": {"workers": ["h:1"]}, "task": {"type": "worker", "index": 0}})", "cluster.workers: unknown role"},
        {R"({"cluster": {"worker": "h:1"}, "task": {"type": "worker", "index": 0}})", "cluster.worker: must be an array"},
        {R"({"cluster": {"worker": [5]}, "task": {"type": "worker", "index": 0}})", "cluster.worker[0]: must be a \"host:port\" string, got a number"},
        {R"({"cluster": {"worker": ["h:1", "nohost"]}, "task": {"type": "worker", "index": 0}})", "cluster.worker[1]: missing port"},
        {R"({"cluster": {"worker": [":80"]}, "task": {"type": "worker", "index": 0}})", "empty host"},
        {R"({"cluster": {"worker": ["h:0"]}, "task": {"type": "worker", "index": 0}})", "port out of range"},
        {R"({"cluster": {"worker": ["h:65536"]}, "task": {"type": "worker", "index": 0}})", "port out of range"},
        {R"({"cluster": {"worker": ["h:8x"]}, "task": {"type": "worker", "index": 0}})", "port is not a number"},
        {R"({"cluster": {"worker": ["::1:80"]}, "task": {"type": "worker", "index": 0}})", "IPv6 host must be in brackets"},
        {R"({"cluster": {"worker": ["h:1", "h:1"]}, "task": {"type": "worker", "index": 0}})", "address h:1 is used by two tasks (second: worker:1)"},
        {R"({"cluster": {"chief": ["h:1", "h:2"]}, "task": {"type": "chief", "index": 0}})", "cluster.chief has 2 entries"},
        {R"({"cluster": {"ps": ["h:1"]}, "task": {"type": "ps", "index": 0}})", "needs a chief or at least one worker"},
        {R"({"cluster": {}, "task": {"type": "ps", "index": 0}})", "the cluster has no tasks"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "boss", "index": 0}})", "task.type \"boss\" is not chief, worker or ps"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": -1}})", "task.index must be a non-negative integer"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1.5}})", "task.index must be a non-negative integer"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}})", "task.index is missing"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"index": 0}})", "task.type is missing"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1}})", "task worker:1 is not in the cluster (cluster.worker has 1 entries)"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "ps", "index": 0}})", "task ps:0 is not in the cluster"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0, "rank": 3}})", "task: unknown key \"rank\""},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "extra": 1})", "unknown key \"extra\""},
        {R"({"cluster": {"worker": ["h:1"]}, "cluster": {"worker": ["h:2"]}, "task": {"type": "worker", "index": 0}})", "duplicate key \"cluster\""},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "secret": 7})", "\"secret\" must be a string"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"heartbeat_timeout_ms": 0}})", "options.heartbeat_timeout_ms must be a positive integer"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"speed": 1}})", "options: unknown key \"speed\""},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"adaptive_spin": 1}})", "options.adaptive_spin must be true or false"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"spin_wait_us": true}})", "options.spin_wait_us must be a positive integer"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"segment_bytes": 9, "max_frame_bytes": 8}})", "segment_bytes exceeds"},
    };
    for (const auto& c : cases) {
        INFO(c.json);
        auto msg = parse_error(c.json);
        CHECK_THAT(msg, Contains(c.message));
        CHECK_THAT(msg, Contains("SPEC"));
    }
}

TEST_CASE("from_env and from_file") {
    ::unsetenv("TYPEFLOW_CONFIG");
    ::unsetenv("TYPEFLOW_CONFIG_FILE");
    CHECK_THROWS_WITH(cluster_spec::from_env(), Contains("TYPEFLOW_CONFIG"));
    ::setenv("TYPEFLOW_CONFIG", good, 1);
    CHECK(cluster_spec::from_env().rank() == 2);
    ::setenv("TYPEFLOW_CONFIG", "{oops", 1);
    CHECK_THROWS_WITH(cluster_spec::from_env(), Contains("TYPEFLOW_CONFIG: invalid JSON"));
    ::unsetenv("TYPEFLOW_CONFIG");
    char path[] = "/tmp/typeflow-spec-XXXXXX";
    int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::close(fd);
    { std::ofstream(path) << good; }
    ::setenv("TYPEFLOW_CONFIG_FILE", path, 1);
    CHECK(cluster_spec::from_env().task.name() == "worker:1");
    { std::ofstream(path) << "{\"cluster\": 1}"; }
    CHECK_THROWS_WITH(cluster_spec::from_env(), Contains(std::string(path) + ": \"cluster\" must be an object"));
    std::remove(path);
    CHECK_THROWS_WITH(cluster_spec::from_file(path), Contains("cannot open cluster spec file"));
    ::unsetenv("TYPEFLOW_CONFIG_FILE");
    ::setenv("TYPEFLOW_SECRET", "env-secret", 1);
    CHECK(cluster_spec::parse(good).effective_secret() == "env-secret");
    ::unsetenv("TYPEFLOW_SECRET");
    CHECK(cluster_spec::parse(good).effective_secret() == "s3");
}

// ps_checkpoints' files (distributed/ps_checkpoints.hpp): only a commit whose
// every shard is complete is restored; a shard or commit cut off mid-write, a
// missing shard, or a commit of another step or ps count is passed over.
#include <typeflow/typeflow.hpp>
#include <typeflow/dist.hpp>
#include <typeflow/distributed/ps_checkpoints.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace tf = typeflow;
namespace tfd = typeflow::dist;
namespace fs = std::filesystem;

namespace {
struct temp_dir {
    fs::path p = fs::temp_directory_path() / ("tf_ps_ckpt_" + std::to_string(::getpid()));
    temp_dir() { fs::create_directories(p); }
    ~temp_dir() { fs::remove_all(p); }
    std::string str() const { return p.string(); }
};
void write_text(const fs::path& f, const std::string& text) { std::ofstream(f) << text; }
std::string commit_text(std::int64_t step, int num_ps) {
    std::string t = "typeflow-ps-commit\nstep " + std::to_string(step) + "\nshards " + std::to_string(num_ps) + "\n";
    for (int q = 0; q < num_ps; ++q) t += tfd::ps_shard_name(step, q, num_ps) + "\n";
    return t + "end\n";
}
}  // namespace

TEST_CASE("only a commit whose shards are all complete is restored") {
    temp_dir d;
    tf::variable<"w", double, tf::shape<64, 8>> w;
    tf::io::saver sv(w);
    // steps 4 and 8: complete
    for (int k : {4, 8}) {
        for (int q = 0; q < 2; ++q) sv.write(d.str() + "/" + tfd::ps_shard_name(k, q, 2));
        write_text(d.p / tfd::ps_commit_name(k), commit_text(k, 2));
    }
    CHECK(tfd::latest_ps_checkpoint(d.str(), 2) == 8);
    CHECK(tfd::ps_checkpoint_committed(d.str(), 4, 2));
    CHECK_FALSE(tfd::latest_ps_checkpoint(d.str(), 3));  // written for 2 ps tasks

    SECTION("a shard cut off mid-write") {
        for (int q = 0; q < 2; ++q) sv.write(d.str() + "/" + tfd::ps_shard_name(12, q, 2));
        const fs::path s1 = d.p / tfd::ps_shard_name(12, 1, 2);
        fs::resize_file(s1, fs::file_size(s1) / 2);
        write_text(d.p / tfd::ps_commit_name(12), commit_text(12, 2));
        CHECK(tfd::latest_ps_checkpoint(d.str(), 2) == 8);
    }
    SECTION("a missing shard") {
        sv.write(d.str() + "/" + tfd::ps_shard_name(12, 0, 2));
        write_text(d.p / tfd::ps_commit_name(12), commit_text(12, 2));
        CHECK(tfd::latest_ps_checkpoint(d.str(), 2) == 8);
    }
    SECTION("a commit cut off, or naming another step, or other shards") {
        for (int k : {12, 16, 20})
            for (int q = 0; q < 2; ++q) sv.write(d.str() + "/" + tfd::ps_shard_name(k, q, 2));
        const std::string c12 = commit_text(12, 2);
        write_text(d.p / tfd::ps_commit_name(12), c12.substr(0, c12.size() - 5));  // no "end"
        write_text(d.p / tfd::ps_commit_name(16), commit_text(20, 2));
        std::string c20 = commit_text(20, 2);
        c20.replace(c20.find("shard-1"), 7, "shard-0");
        write_text(d.p / tfd::ps_commit_name(20), c20);
        CHECK(tfd::latest_ps_checkpoint(d.str(), 2) == 8);
    }
    SECTION("a file that is not a checkpoint under a shard's name") {
        for (int q = 0; q < 2; ++q) write_text(d.p / tfd::ps_shard_name(12, q, 2), "not a checkpoint");
        write_text(d.p / tfd::ps_commit_name(12), commit_text(12, 2));
        CHECK(tfd::latest_ps_checkpoint(d.str(), 2) == 8);
    }
    SECTION("names that only look like commits") {
        write_text(d.p / "ps-.commit", "x");
        write_text(d.p / "ps-99commit", "x");
        write_text(d.p / "ps-99.commitx", commit_text(99, 2));
        fs::create_directories(d.p / "ps-100.commit");
        CHECK(tfd::latest_ps_checkpoint(d.str(), 2) == 8);
    }
}

TEST_CASE("a directory that does not exist holds no checkpoint") {
    CHECK_FALSE(tfd::latest_ps_checkpoint("/nonexistent/typeflow/dir", 2));
}

TEST_CASE("options a ps_checkpoints cannot follow are refused, naming the field") {
    using Catch::Matchers::Contains;
    CHECK_NOTHROW(tfd::check_options({.dir = "d"}));
    CHECK_THROWS_WITH(tfd::check_options({}), Contains("no directory given"));
    CHECK_THROWS_WITH(tfd::check_options({.dir = "d", .every = 0}), Contains("every = 0, must be at least 1"));
    CHECK_THROWS_WITH(tfd::check_options({.dir = "d", .every = 5, .keep = 0}), Contains("keep = 0, must be at least 1"));
}

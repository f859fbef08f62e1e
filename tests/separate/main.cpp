// tests/separate/main.cpp — typeflow built with TYPEFLOW_SEPARATE_COMPILATION:
// two translation units run sessions over the runtime compiled once in
// src.cpp, and use tf::io compiled there too (this one saves and restores a
// checkpoint, layer.cpp writes a summary). Checks results against a naive
// loop, the restored values, the summary read back, and that a bad feed still
// raises tf::error from the out-of-line code. Exits non-zero on any failure.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <typeflow/io/events.hpp>
#include <typeflow/io/saver.hpp>
#include <typeflow/typeflow.hpp>

#if defined(CEREAL_CEREAL_HPP_) || defined(RAPIDJSON_RAPIDJSON_H_)
#error "with TYPEFLOW_SEPARATE_COMPILATION the io headers must not include Cereal or RapidJSON"
#endif

#include <unistd.h>

namespace tf = typeflow;

tf::tensor<float> relu_layer(const tf::tensor<float>& xb);
std::string write_summary(const std::string& logdir);

// A fresh directory under $TMPDIR (or /tmp).
static std::string temp_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string t = std::string(base && *base ? base : "/tmp") + "/typeflow_separate_XXXXXX";
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    return ::mkdtemp(buf.data()) ? std::string(buf.data()) : std::string();
}

// Saves two variables and a plain tensor, changes them, restores them.
static int check_checkpoint(const std::string& dir) {
    int failures = 0;
    tf::variable<"w", float, tf::shape<2, 3>> w{tf::init::zeros{}};
    tf::variable<"step", std::int64_t, tf::shape<>> step{tf::init::zeros{}};
    tf::tensor<double> emb({2, 2}, {1.5, -2.5, 3.5, -4.5});
    for (long i = 0; i < 6; ++i) w.value()[i] = 0.25f * static_cast<float>(i) - 0.5f;
    step.value()[0] = 42;
    tf::io::saver saver(w, step);
    saver.add("emb", emb, tf::dims{tf::dyn, 2});
    const std::string path = saver.save(dir + "/ckpt", 42);
    const auto latest = tf::io::latest_checkpoint(dir + "/ckpt");
    if (!latest || *latest != path) {
        std::printf("FAIL: latest_checkpoint: %s, saved %s\n", latest ? latest->c_str() : "(none)", path.c_str());
        ++failures;
    }
    for (long i = 0; i < 6; ++i) w.value()[i] = 9.0f;
    step.value()[0] = -1;
    emb = tf::tensor<double>({1, 2}, {0.0, 0.0});
    saver.restore(path);
    for (long i = 0; i < 6; ++i)
        if (w.value()[i] != 0.25f * static_cast<float>(i) - 0.5f) {
            std::printf("FAIL: restored w[%ld] = %g\n", i, w.value()[i]);
            ++failures;
        }
    if (step.value()[0] != 42) {
        std::printf("FAIL: restored step = %lld\n", static_cast<long long>(step.value()[0]));
        ++failures;
    }
    if (!(emb.dims() == tf::dims{2, 2}) || emb[0] != 1.5 || emb[3] != -4.5) {
        std::puts("FAIL: the plain tensor was not restored to [2,2] {1.5, -2.5, 3.5, -4.5}");
        ++failures;
    }
    // a checkpoint of another dtype is refused and changes nothing
    tf::variable<"w", double, tf::shape<2, 3>> wd{tf::init::zeros{}};
    tf::variable<"step", std::int64_t, tf::shape<>> step2{tf::init::zeros{}};
    tf::io::saver other(wd, step2);
    try {
        other.restore(path, tf::io::restore_options{.allow_unused = true});
        std::puts("FAIL: restoring float32 'w' into a float64 variable did not throw");
        ++failures;
    } catch (const tf::error& e) {
        if (std::string(e.what()).find("'w': dtype float64") == std::string::npos) {
            std::printf("FAIL: unexpected message: %s\n", e.what());
            ++failures;
        }
    }
    if (step2.value()[0] != 0) {
        std::puts("FAIL: a failed restore changed a variable");
        ++failures;
    }
    return failures;
}

// The summary layer.cpp writes, read back from its event file.
static int check_summary(const std::string& dir) {
    int failures = 0;
    const auto events = tf::io::read_events(write_summary(dir + "/logs"));
    bool scalar = false, histogram = false;
    for (const auto& e : events)
        for (const auto& v : e.summary) {
            if (v.tag == "loss" && v.simple_value && *v.simple_value == 0.5f && e.step == 7) scalar = true;
            if (v.tag == "h" && v.histo && v.histo->num == 3 && v.histo->sum == 6) histogram = true;
        }
    if (events.size() != 3 || events[0].file_version != "brain.Event:2" || !scalar || !histogram) {
        std::printf("FAIL: the event file holds %zu events, not the version, the scalar and the histogram\n",
                    events.size());
        ++failures;
    }
    return failures;
}

int main() {
#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
    std::puts("FAIL: built without TYPEFLOW_SEPARATE_COMPILATION");
    return 1;
#endif
    int failures = 0;
    tf::tensor<float> xb({4, 3});
    for (long i = 0; i < xb.size(); ++i) xb[i] = 0.25f * static_cast<float>(i) - 1.0f;

    // relu(x W + b) with W = 0.5 everywhere and b = -1: naive reference
    const tf::tensor<float> out = relu_layer(xb);
    for (long r = 0; r < 4; ++r)
        for (long c = 0; c < 2; ++c) {
            float acc = -1.0f;
            for (long k = 0; k < 3; ++k) acc += 0.5f * xb[r * 3 + k];
            const float want = acc > 0 ? acc : 0.0f;
            if (std::abs(out[r * 2 + c] - want) > 1e-6f) {
                std::printf("FAIL: out[%ld,%ld] = %g, want %g\n", r, c, out[r * 2 + c], want);
                ++failures;
            }
        }

    // this translation unit's own session: x * x + 1 over the same feed
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    tf::session s;
    const tf::tensor<float> sq = s.run(x * x + 1.0f, tf::feed(x, xb));
    for (long i = 0; i < xb.size(); ++i)
        if (sq[i] != xb[i] * xb[i] + 1.0f) {
            std::printf("FAIL: sq[%ld] = %g\n", i, sq[i]);
            ++failures;
        }

    // a wrong feed shape is a tf::error naming the placeholder and both shapes
    tf::tensor<float> bad({4, 5});
    try {
        (void)s.run(x * x, tf::feed(x, bad));
        std::puts("FAIL: a [4,5] feed for a [?,3] placeholder did not throw");
        ++failures;
    } catch (const tf::error& e) {
        const std::string m = e.what();
        if (m.find("'x'") == std::string::npos || m.find("[?,3]") == std::string::npos ||
            m.find("[4,5]") == std::string::npos) {
            std::printf("FAIL: unexpected message: %s\n", m.c_str());
            ++failures;
        }
    }
    // tf::io: a checkpoint here, a summary written by layer.cpp
    const std::string dir = temp_dir();
    if (dir.empty()) {
        std::puts("FAIL: cannot create a temporary directory");
        return 1;
    }
    try {
        failures += check_checkpoint(dir);
        failures += check_summary(dir);
    } catch (const tf::error& e) {
        std::printf("FAIL: %s\n", e.what());
        ++failures;
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);

    if (failures == 0) std::puts("separate compilation: OK");
    return failures == 0 ? 0 : 1;
}

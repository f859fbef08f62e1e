// Steady-state runs make no heap allocation: counted by replacing the global
// operator new for this test binary.
#include <atomic>
#include <cstdlib>
#include <new>

#include <catch2/catch.hpp>

#include <typeflow/typeflow.hpp>

namespace {
std::atomic<long> allocations{0};
void* counted(std::size_t n, std::size_t align) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (n == 0) n = 1;
    void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n);
    if (!p) throw std::bad_alloc();
    return p;
}
}  // namespace

void* operator new(std::size_t n) { return counted(n, 0); }
void* operator new[](std::size_t n) { return counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    try { return counted(n, 0); } catch (...) { return nullptr; }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    try { return counted(n, 0); } catch (...) { return nullptr; }
}
// The aligned nothrow forms too: tensors' buffers come from them
// (detail::allocate_buffer), and under ASan a block from its own operator new
// must not reach the free() below.
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    try { return counted(n, static_cast<std::size_t>(a)); } catch (...) { return nullptr; }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    try { return counted(n, static_cast<std::size_t>(a)); } catch (...) { return nullptr; }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace tf = typeflow;

TEST_CASE("repeated runs of one graph make no heap allocation", "[session][alloc]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 8>> x;
    tf::variable<"W1", float, tf::shape<8, 16>> W1{tf::init::glorot_uniform{}};
    tf::variable<"b1", float, tf::shape<16>> b1;
    tf::variable<"W2", float, tf::shape<16, 4>> W2{tf::init::glorot_uniform{}};
    tf::variable<"steps", float, tf::shape<>> steps;
    auto h = tf::relu(tf::matmul(x, W1) + b1);
    auto logits = tf::matmul(h, W2);
    auto loss = tf::mean(tf::square(logits - 1.0f));
    auto tick = tf::assign_add(steps, 1.0f);
    tf::tensor<float> xb({32, 8});
    for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = static_cast<float>(i % 7) * 0.1f;

    tf::session s;
    float first = 0;
    // The count sees the blocks tensors' buffers come from, so a run that
    // allocated one would show.
    const long start = allocations.load();
    tf::detail::free_buffer(tf::detail::allocate_buffer(1 << 20), 1 << 20);
    CHECK(allocations.load() - start == 1);
    {
        auto [l, t] = s.run(tf::fetch(loss, tick), tf::feed(x, xb));  // plans, allocates
        first = l.item();
        (void)t;
    }
    const long before = allocations.load();
    float last = 0;
    for (int i = 0; i < 10; ++i) {
        auto [l, t] = s.run(tf::fetch(loss, tick), tf::feed(x, xb));
        last = l.item();
        (void)t;
    }
    CHECK(allocations.load() - before == 0);
    CHECK(last == first);
    CHECK(steps.value().item() == 11.f);

    // a new batch size re-plans once, then runs allocation-free again
    tf::tensor<float> xb2({5, 8});
    s.run(loss, tf::feed(x, xb2));
    const long before2 = allocations.load();
    for (int i = 0; i < 5; ++i) s.run(loss, tf::feed(x, xb2));
    CHECK(allocations.load() - before2 == 0);

    // a result the caller keeps is not overwritten; that run allocates a new one
    auto kept = s.run(loss, tf::feed(x, xb));
    const float kept_value = kept.item();
    auto next = s.run(loss, tf::feed(x, xb));
    CHECK(kept.item() == kept_value);
    CHECK(next.item() == kept_value);
}

TEST_CASE("repeated runs of a graph with tf::expr segments make no heap allocation", "[session][alloc][expr]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 8>> x;
    tf::variable<"w", float, tf::shape<8>> w{tf::init::uniform{-0.5, 0.5}};
    tf::expr<float, tf::shape<tf::dyn, 8>> h = x;
    for (int k = 0; k < 20; ++k) h = tf::tanh(h * w + h);
    auto loss = tf::sum(h);
    tf::tensor<float> xb({16, 8});
    for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = static_cast<float>(i % 5) * 0.1f;
    tf::session s;
    const float first = s.run(loss, tf::feed(x, xb)).item();
    const long before = allocations.load();
    float last = 0;
    for (int i = 0; i < 10; ++i) last = s.run(loss, tf::feed(x, xb)).item();
    CHECK(allocations.load() - before == 0);
    CHECK(last == first);
}

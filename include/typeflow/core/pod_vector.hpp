// typeflow/core/pod_vector.hpp — a growable array of trivially copyable
// elements, for the runtime's plain code.
//
// std::vector's members are constexpr in C++20 and are instantiated and
// optimised again in every translation unit, once per element type. This
// array has a handful of small members that work on bytes, so the runtime's
// tables cost little to compile in header-only builds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include <typeflow/core/config.hpp>

namespace typeflow::detail {

/// Grows the block `p` of `cap` bytes (contents kept) to at least `need` bytes.
inline void* pod_grow(void* p, std::size_t& cap, std::size_t need) {
    std::size_t c = cap ? cap : 64;
    while (c < need) c *= 2;
    void* q = std::realloc(p, c);
    if (!q) throw std::bad_alloc();
    cap = c;
    return q;
}

/// The storage of pod_vector, in bytes: its growing and copying code exists
/// once, not once per element type.
class pod_bytes {
public:
    pod_bytes(const pod_bytes&) = delete;
    pod_bytes& operator=(const pod_bytes&) = delete;

protected:
    pod_bytes() = default;
    pod_bytes(pod_bytes&& o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_) { o.p_ = nullptr, o.n_ = o.cap_ = 0; }
    ~pod_bytes() { std::free(p_); }
    void move_from(pod_bytes& o) noexcept {
        if (this != &o) {
            std::free(p_);
            p_ = o.p_, n_ = o.n_, cap_ = o.cap_;
            o.p_ = nullptr, o.n_ = o.cap_ = 0;
        }
    }
    /// Capacity of at least `bytes` bytes.
    TYPEFLOW_NOINLINE void reserve_bytes(std::size_t bytes) {
        if (bytes > cap_) p_ = pod_grow(p_, cap_, bytes);
    }
    /// `bytes` bytes; new ones are zero.
    TYPEFLOW_NOINLINE void resize_bytes(std::size_t bytes) {
        reserve_bytes(bytes);
        if (bytes > n_) std::memset(static_cast<char*>(p_) + n_, 0, bytes - n_);
        n_ = bytes;
    }
    /// Appends `size` bytes from `src` (which may lie in this array).
    TYPEFLOW_NOINLINE void append_bytes(const void* src, std::size_t size) {
        if (n_ + size > cap_) {
            const auto at = reinterpret_cast<std::uintptr_t>(src), base = reinterpret_cast<std::uintptr_t>(p_);
            const bool inside = p_ && at >= base && at < base + n_;
            reserve_bytes(n_ + size);
            if (inside) src = static_cast<const char*>(p_) + (at - base);
        }
        if (size) std::memcpy(static_cast<char*>(p_) + n_, src, size);
        n_ += size;
    }
    /// Replaces the contents by `size` bytes from `src`.
    TYPEFLOW_NOINLINE void assign_bytes(const void* src, std::size_t size) {
        reserve_bytes(size);
        if (size) std::memcpy(p_, src, size);
        n_ = size;
    }
    void* p_ = nullptr;
    std::size_t n_ = 0, cap_ = 0;  // bytes
};

/// A contiguous array of T (trivially copyable); new elements are zero-filled.
template <class T>
class pod_vector : private pod_bytes {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

public:
    pod_vector() = default;
    explicit pod_vector(std::size_t n) { resize(n); }
    pod_vector(const pod_vector& o) : pod_bytes() { assign_bytes(o.p_, o.n_); }
    pod_vector(pod_vector&& o) noexcept : pod_bytes(static_cast<pod_bytes&&>(o)) {}
    pod_vector& operator=(const pod_vector& o) {
        if (this != &o) assign_bytes(o.p_, o.n_);
        return *this;
    }
    pod_vector& operator=(pod_vector&& o) noexcept {
        move_from(o);
        return *this;
    }
    ~pod_vector() = default;

    std::size_t size() const noexcept { return n_ / sizeof(T); }
    bool empty() const noexcept { return n_ == 0; }
    T* data() noexcept { return static_cast<T*>(p_); }
    const T* data() const noexcept { return static_cast<const T*>(p_); }
    T& operator[](std::size_t i) noexcept { return data()[i]; }
    const T& operator[](std::size_t i) const noexcept { return data()[i]; }
    T* begin() noexcept { return data(); }
    T* end() noexcept { return data() + size(); }
    const T* begin() const noexcept { return data(); }
    const T* end() const noexcept { return data() + size(); }

    void clear() noexcept { n_ = 0; }
    /// Removes the last element (the array must not be empty).
    void pop_back() noexcept { n_ -= sizeof(T); }
    /// n elements; new ones are zero bytes.
    void resize(std::size_t n) { resize_bytes(n * sizeof(T)); }
    /// n copies of v.
    void assign(std::size_t n, const T& v) {
        const T copy = v;  // v may live in this array
        resize_bytes(n * sizeof(T));
        for (std::size_t i = 0; i < n; ++i) data()[i] = copy;
    }
    void push_back(const T& v) {
        if (n_ + sizeof(T) <= cap_) {
            std::memcpy(static_cast<char*>(p_) + n_, &v, sizeof(T));
            n_ += sizeof(T);
        } else {
            append_bytes(&v, sizeof(T));
        }
    }
    void append(const T* first, std::size_t count) { append_bytes(first, count * sizeof(T)); }
    void reserve(std::size_t n) { reserve_bytes(n * sizeof(T)); }
};

/// A map from (non-null pointer, index) to a position (open addressing, at
/// most half full): the runtime's tables of node objects.
class key_map {
public:
    static constexpr std::uint32_t none = ~std::uint32_t{0};
    /// The value of (p, i), or none.
    std::uint32_t find(const void* p, std::size_t i) const noexcept {
        if (slots_.empty()) return none;
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t h = hash(p, i) & mask;; h = (h + 1) & mask) {
            const slot& e = slots_[h];
            if (!e.p) return none;
            if (e.p == p && e.i == i) return e.v;
        }
    }
    /// Adds (p, i) -> v; (p, i) must not be there yet.
    void insert(const void* p, std::size_t i, std::uint32_t v) {
        if (2 * (count_ + 1) > slots_.size()) {
            pod_vector<slot> old = static_cast<pod_vector<slot>&&>(slots_);
            slots_.resize(old.empty() ? 64 : 2 * old.size());  // zero bytes: empty slots
            count_ = 0;
            for (const slot& e : old)
                if (e.p) insert(e.p, e.i, e.v);
        }
        const std::size_t mask = slots_.size() - 1;
        std::size_t h = hash(p, i) & mask;
        while (slots_[h].p) h = (h + 1) & mask;
        slots_[h] = slot{p, i, v};
        ++count_;
    }
    /// Replaces the value of (p, i), which must be there.
    void set(const void* p, std::size_t i, std::uint32_t v) noexcept {
        const std::size_t mask = slots_.size() - 1;
        std::size_t h = hash(p, i) & mask;
        while (!(slots_[h].p == p && slots_[h].i == i)) h = (h + 1) & mask;
        slots_[h].v = v;
    }
    std::size_t size() const noexcept { return count_; }

private:
    struct slot {
        const void* p;
        std::size_t i;
        std::uint32_t v;
    };
    static std::size_t hash(const void* p, std::size_t i) noexcept {
        std::size_t h = (reinterpret_cast<std::size_t>(p) >> 3) ^ (i * 0x9e3779b97f4a7c15ull);
        h *= 0xff51afd7ed558ccdull;
        return h ^ (h >> 29);
    }
    pod_vector<slot> slots_;
    std::size_t count_ = 0;
};

/// A set of non-null pointers.
class pointer_set {
public:
    /// Adds p; false when it was there already.
    bool insert(const void* p) {
        if (map_.find(p, 0) != key_map::none) return false;
        map_.insert(p, 0, 0);
        return true;
    }
    bool contains(const void* p) const noexcept { return map_.find(p, 0) != key_map::none; }
    std::size_t size() const noexcept { return map_.size(); }

private:
    key_map map_;
};

}  // namespace typeflow::detail

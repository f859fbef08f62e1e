// typeflow/core/tensor.hpp — the tensor type of feeds, results and variables.
#pragma once
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow {

/// A non-owning, row-major view of contiguous elements with run-time dims.
/// `T` may be const. Feeds take views, so feeding never copies.
template <class T>
struct tensor_view {
    T* data = nullptr;
    typeflow::dims dims{};

    index_t size() const { return dims.numel(); }
    T& operator[](index_t i) const { return data[i]; }
    operator tensor_view<const T>() const { return {data, dims}; }
};

namespace detail {
inline constexpr std::size_t tensor_alignment = 64;
// Buffers of 64 KiB and more start on a 4 KiB page. A buffer written while
// others are read streams faster when its start is not just above theirs
// modulo 4 KiB (a load then waits on an earlier store to an address that
// matches it in the low 12 bits, "4K aliasing"); malloc'ed blocks that large
// start 16-64 bytes into a page. The fused chain ran 8-15% faster with its
// output page-aligned (benchmarks/RESULTS.md).
constexpr std::size_t buffer_alignment(std::size_t bytes) noexcept {
    return bytes >= std::size_t{64} << 10 ? std::size_t{4096} : tensor_alignment;
}
/// A block of `bytes` bytes (at least one), aligned by buffer_alignment;
/// throws std::bad_alloc when there is none. (Through the nothrow form:
/// the sanitizers' runtimes, with allocator_may_return_null, return null
/// from it instead of ending the process as their throwing form does.)
inline void* allocate_buffer(std::size_t bytes) {
    void* p = ::operator new(bytes, std::align_val_t{buffer_alignment(bytes)}, std::nothrow);
    if (!p) throw std::bad_alloc();
    return p;
}
/// Frees a block of allocate_buffer(bytes).
inline void free_buffer(void* p, std::size_t bytes) noexcept {
    ::operator delete(p, std::align_val_t{buffer_alignment(bytes)});
}
/// Refuses extents a tensor of elements of elem_size bytes cannot have
/// (negative, or more elements or bytes than fit); returns their count.
TYPEFLOW_NOINLINE inline element_count checked_count(const dims& d, std::size_t elem_size, dtype dt) {
    const element_count c = count_elements(d, elem_size);
    if (c.ok) return c;
    for (std::size_t i = 0; i < d.rank; ++i)
        if (d.d[i] < 0) raise(message() << "tensor: extents must be known and >= 0, got " << d);
    raise(message() << "tensor: shape " << d << " has too many elements for a " << dtype_name(dt)
                    << " tensor: its element count or size in bytes overflows");
}
[[noreturn]] TYPEFLOW_NOINLINE inline void raise_tensor_allocation_failed(const dims& d, std::size_t bytes, dtype dt) {
    raise(message() << "tensor: cannot allocate " << bytes << " bytes for a " << dtype_name(dt) << " tensor of shape "
                    << d);
}
/// Zero-filled storage for a tensor of extents d (checked: a tf::error for
/// extents that overflow or memory that cannot be had, never std::bad_alloc).
template <class T>
std::shared_ptr<T[]> allocate_zeroed(const dims& d) {
    const std::size_t bytes = std::max<std::size_t>(1, checked_count(d, sizeof(T), dtype_of<T>).bytes);
    void* p = nullptr;
    try {
        p = allocate_buffer(bytes);
    } catch (const std::bad_alloc&) {
        raise_tensor_allocation_failed(d, bytes, dtype_of<T>);
    }
    std::memset(p, 0, bytes);
    return std::shared_ptr<T[]>(static_cast<T*>(p), [bytes](T* q) { free_buffer(q, bytes); });
}
}  // namespace detail

/// An owning, row-major tensor with shared storage: copies share elements
/// (like TensorFlow's and PyTorch's tensors); `clone()` copies them.
template <value_type_c T>
class tensor {
public:
    using value_type = T;

    tensor() = default;
    /// A zero-filled tensor of the given extents.
    /// Extents that are negative or whose element count or byte count
    /// overflows, and memory that cannot be had, are a tf::error.
    explicit tensor(const typeflow::dims& d) : data_(detail::allocate_zeroed<T>(d)), dims_(d) {}
    /// A tensor of the given extents filled row-major from `values`.
    tensor(const typeflow::dims& d, std::initializer_list<T> values) : tensor(d) {
        if (static_cast<index_t>(values.size()) != d.numel())
            detail::raise(detail::message() << "tensor: " << values.size() << " values given for shape " << d);
        std::copy(values.begin(), values.end(), data_.get());
    }
    /// A copy of the elements a view shows.
    static tensor copy_of(tensor_view<const T> v) {
        tensor t(v.dims);
        std::copy(v.data, v.data + v.dims.numel(), t.data());
        return t;
    }

    T* data() noexcept { return data_.get(); }
    const T* data() const noexcept { return data_.get(); }
    const typeflow::dims& dims() const noexcept { return dims_; }
    std::size_t rank() const noexcept { return dims_.rank; }
    index_t size() const noexcept { return data_ ? dims_.numel() : 0; }
    bool empty() const noexcept { return !data_; }
    static constexpr typeflow::dtype dtype() noexcept { return dtype_of<T>; }

    /// Element by flat row-major index.
    T& operator[](index_t i) noexcept { return data_[i]; }
    const T& operator[](index_t i) const noexcept { return data_[i]; }

    /// Element by multi-index; the count of indices must equal the rank.
    template <class... I>
    T& operator()(I... idx) {
        return data_[offset(idx...)];
    }
    template <class... I>
    const T& operator()(I... idx) const {
        return data_[offset(idx...)];
    }
    /// The single element of a one-element tensor.
    T item() const {
        if (size() != 1) detail::raise(detail::message() << "tensor::item: tensor of shape " << dims_ << " has not one element");
        return data_[0];
    }

    tensor_view<T> view() noexcept { return {data(), dims_}; }
    tensor_view<const T> view() const noexcept { return {data(), dims_}; }
    operator tensor_view<const T>() const noexcept { return view(); }

    /// A deep copy.
    tensor clone() const { return copy_of(view()); }
    /// The elements, row-major.
    std::vector<T> to_vector() const { return std::vector<T>(data(), data() + size()); }
    /// Same elements, new extents of equal element count (shares storage).
    tensor reshaped(const typeflow::dims& d) const {
        const element_count c = count_elements(d, sizeof(T));
        if (!c.ok || c.numel != size())
            detail::raise(detail::message() << "tensor::reshaped: cannot view " << dims_ << " as " << d);
        tensor t = *this;
        t.dims_ = d;
        return t;
    }
    /// True when no other tensor shares these elements. When true, what the
    /// last other holder did with them (on any thread) happened before: the
    /// caller may overwrite them.
    bool unique() const noexcept {
        if (!data_) return false;
        // A copy made and dropped first: its count increment reads the last
        // other holder's release (use_count() alone is a relaxed load).
        (void)std::shared_ptr<T[]>(data_);
        return data_.use_count() == 1;
    }

private:
    template <class... I>
    index_t offset(I... idx) const {
        static_assert((std::is_integral_v<I> && ...), "typeflow: tensor(): indices must be integers");
        const index_t ix[] = {static_cast<index_t>(idx)..., 0};
        index_t off = 0;
        for (std::size_t k = 0; k < sizeof...(I); ++k) off = off * dims_.d[k] + ix[k];
        return off;
    }

    std::shared_ptr<T[]> data_;
    typeflow::dims dims_{};
};

/// A view of a std::vector's elements as a tensor of extents d (no copy).
template <class T>
tensor_view<T> view(std::vector<T>& v, const dims& d) {
    const element_count c = count_elements(d, sizeof(T));
    if (!c.ok || c.numel != static_cast<index_t>(v.size()))
        detail::raise(detail::message() << "view: vector of " << v.size() << " elements cannot have shape " << d);
    return {v.data(), d};
}
template <class T>
tensor_view<const T> view(const std::vector<T>& v, const dims& d) {
    const element_count c = count_elements(d, sizeof(T));
    if (!c.ok || c.numel != static_cast<index_t>(v.size()))
        detail::raise(detail::message() << "view: vector of " << v.size() << " elements cannot have shape " << d);
    return {v.data(), d};
}
/// A view of a whole std::vector as a rank-1 tensor.
template <class T>
tensor_view<const T> view(const std::vector<T>& v) {
    return {v.data(), dims{static_cast<index_t>(v.size())}};
}

}  // namespace typeflow

// typeflow/data/element.hpp — the elements of a tf::data pipeline (a
// std::tuple of tf::tensor), cardinality constants, and the copies that
// reuse an element's storage when nobody else holds it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/tensor.hpp>

namespace typeflow::data {

/// The element type of a dataset whose components hold T...: a tuple of tensors.
template <value_type_c... T>
using element = std::tuple<tensor<T>...>;

/// cardinality() of a dataset that never ends (repeat(-1)).
inline constexpr index_t infinite_cardinality = -1;
/// cardinality() of a dataset whose length is not known without iterating it (filter).
inline constexpr index_t unknown_cardinality = -2;

namespace detail {

template <class E>
inline constexpr bool is_element_v = false;
template <value_type_c... T>
inline constexpr bool is_element_v<std::tuple<tensor<T>...>> = sizeof...(T) > 0;

template <class R>
inline constexpr bool is_tensor_v = false;
template <value_type_c T>
inline constexpr bool is_tensor_v<tensor<T>> = true;

/// The dims of one row of a tensor whose first axis is the batch (or slice) axis.
inline dims row_dims(const dims& d) noexcept {
    dims r;
    r.rank = d.rank - 1;
    for (std::size_t i = 1; i < d.rank; ++i) r.d[i - 1] = d.d[i];
    return r;
}

/// d with a leading axis of extent n.
inline dims with_leading(index_t n, const dims& d) noexcept {
    dims r;
    r.rank = d.rank + 1;
    r.d[0] = n;
    for (std::size_t i = 0; i < d.rank; ++i) r.d[i + 1] = d.d[i];
    return r;
}

/// Makes t a tensor of extents d that nobody else holds, keeping its storage
/// when it already is one (the contents are then left as they were).
template <class T>
void reuse_or_allocate(tensor<T>& t, const dims& d) {
    if (!(t.unique() && t.dims() == d)) t = tensor<T>(d);
}

/// Copies n elements of src into t, which becomes a tensor of extents d
/// that nobody else holds (t's storage is reused when possible).
template <class T>
void assign_copy(tensor<T>& t, const dims& d, const T* src) {
    reuse_or_allocate(t, d);
    const std::size_t n = static_cast<std::size_t>(d.numel());
    if (n) std::memcpy(static_cast<void*>(t.data()), src, n * sizeof(T));
}

/// Copies each component of src into dst (storage of dst reused when possible).
template <class... T>
void assign_copy(std::tuple<tensor<T>...>& dst, const std::tuple<tensor<T>...>& src) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (assign_copy(std::get<I>(dst), std::get<I>(src).dims(), std::get<I>(src).data()), ...);
    }(std::index_sequence_for<T...>{});
}

/// A deep copy of an element.
template <class... T>
std::tuple<tensor<T>...> clone(const std::tuple<tensor<T>...>& e) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::tuple<tensor<T>...>(std::get<I>(e).clone()...);
    }(std::index_sequence_for<T...>{});
}

/// Copies one component into row `row` of a batch tensor; the component's
/// extents must be the batch's row extents (else a tf::error naming `what`).
template <class T>
void copy_row(tensor<T>& batch, index_t row, const tensor<T>& src, std::size_t component, const char* what) {
    const dims want = row_dims(batch.dims());
    if (!(src.dims() == want))
        typeflow::detail::raise(typeflow::detail::message()
                                << what << ": component " << static_cast<long long>(component) << " of element "
                                << row << " of a batch has shape " << src.dims() << " where the batch's first has "
                                << want << "; batch elements of one shape (or map them to one)");
    const std::size_t n = static_cast<std::size_t>(want.numel());
    if (n)
        std::memcpy(static_cast<void*>(batch.data() + static_cast<std::size_t>(row) * n), src.data(), n * sizeof(T));
}

/// Copies every component of src into row `row` of the batch tensors.
template <class... T>
void copy_row(std::tuple<tensor<T>...>& batch, index_t row, const std::tuple<tensor<T>...>& src, const char* what) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (copy_row(std::get<I>(batch), row, std::get<I>(src), I, what), ...);
    }(std::index_sequence_for<T...>{});
}

}  // namespace detail
}  // namespace typeflow::data

// typeflow/data/from_tensors.hpp — the in-memory source: tensors sliced
// along their first axis (TensorFlow's Dataset.from_tensor_slices).
#pragma once
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>

#include <typeflow/core/message.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/data/dataset.hpp>
#include <typeflow/data/element.hpp>
#include <typeflow/data/stage.hpp>

namespace typeflow::data {

namespace detail {

/// The stage of from_tensors: row i of every tensor is element i.
template <class... T>
class slices_stage final : public stage<std::tuple<tensor<T>...>>,
                           public indexed<std::tuple<tensor<T>...>>,
                           public std::enable_shared_from_this<slices_stage<T...>> {
    using E = std::tuple<tensor<T>...>;

public:
    explicit slices_stage(const tensor<T>&... t) : src_(t...) {
        index_t k = 0;
        bool first = true;
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (check(std::get<I>(src_), I, k, first), ...);
            ((rows_[I] = row_dims(std::get<I>(src_).dims())), ...);
        }(std::index_sequence_for<T...>{});
        n_ = k;
    }

    std::unique_ptr<cursor<E>> start() const override { return std::make_unique<pass>(*this); }
    index_t cardinality() const override { return n_; }
    std::shared_ptr<const indexed<E>> indexed_view() const override { return this->shared_from_this(); }

    index_t size() const override { return n_; }
    void get(index_t i, E& out) const override {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (assign_copy(std::get<I>(out), rows_[I], row_ptr<I>(i)), ...);
        }(std::index_sequence_for<T...>{});
    }
    void get_into(index_t i, E& batch, index_t row) const override {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (copy_into<I>(i, std::get<I>(batch), row), ...);
        }(std::index_sequence_for<T...>{});
    }

private:
    template <class U>
    static void check(const tensor<U>& t, std::size_t c, index_t& n, bool& first) {
        if (t.rank() == 0)
            typeflow::detail::raise(typeflow::detail::message()
                                    << "data::from_tensors: component " << static_cast<long long>(c)
                                    << " is a scalar (or empty tensor); slicing needs a first axis");
        if (first) {
            n = t.dims()[0];
            first = false;
        } else if (t.dims()[0] != n) {
            typeflow::detail::raise(typeflow::detail::message()
                                    << "data::from_tensors: component " << static_cast<long long>(c) << " has shape "
                                    << t.dims() << ", " << t.dims()[0] << " rows where component 0 has " << n);
        }
    }
    template <std::size_t I>
    const auto* row_ptr(index_t i) const {
        return std::get<I>(src_).data() + i * rows_[I].numel();
    }
    template <std::size_t I, class U>
    void copy_into(index_t i, tensor<U>& batch, index_t row) const {
        const dims want = row_dims(batch.dims());
        if (!(want == rows_[I]))
            typeflow::detail::raise(typeflow::detail::message()
                                    << "data::batch: component " << static_cast<long long>(I) << " of element " << row
                                    << " of a batch has shape " << rows_[I] << " where the batch's first has " << want);
        const std::size_t n = static_cast<std::size_t>(want.numel());
        if (n) std::memcpy(static_cast<void*>(batch.data() + static_cast<std::size_t>(row) * n), row_ptr<I>(i), n * sizeof(U));
    }

    class pass final : public cursor<E> {
    public:
        explicit pass(const slices_stage& s) : s_(s) {}
        bool next(E& out) override {
            if (i_ == s_.n_) return false;
            s_.get(i_++, out);
            return true;
        }
        bool next_into(E& batch, index_t row) override {
            if (i_ == s_.n_) return false;
            s_.get_into(i_++, batch, row);
            return true;
        }
        bool skip() override {
            if (i_ == s_.n_) return false;
            ++i_;
            return true;
        }

    private:
        const slices_stage& s_;
        index_t i_ = 0;
    };

    E src_;
    dims rows_[sizeof...(T)];
    index_t n_ = 0;
};

}  // namespace detail

/// A dataset whose element i is (t[i]...): row i of each tensor along its
/// first axis (TensorFlow's from_tensor_slices). Every tensor needs a first
/// axis of one extent. The dataset shares the tensors' storage (no copy):
/// clone() them first if they will change while it is in use.
template <value_type_c... T>
auto from_tensors(const tensor<T>&... t) {  // (auto: the assertion below fires before dataset<>'s own)
    static_assert(sizeof...(T) > 0, "typeflow: data::from_tensors: give at least one tensor");
    return dataset<T...>::from_slices(t...);
}

template <value_type_c... T>
dataset<T...> dataset<T...>::from_slices(const tensor<T>&... t) {
    return dataset(std::make_shared<detail::slices_stage<T...>>(t...));
}

/// The name TensorFlow uses for from_tensors.
template <value_type_c... T>
dataset<T...> from_tensor_slices(const tensor<T>&... t) {
    return from_tensors(t...);
}

}  // namespace typeflow::data

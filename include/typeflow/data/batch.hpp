// typeflow/data/batch.hpp — the batch stage: consecutive elements stacked
// into tensors with a leading batch axis.
#pragma once
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>

#include <typeflow/core/message.hpp>
#include <typeflow/data/element.hpp>
#include <typeflow/data/stage.hpp>

namespace typeflow::data::detail {

/// The stage of batch(n, drop_remainder).
template <class E>
class batch_stage final : public stage<E> {
public:
    batch_stage(stage_ptr<E> in, index_t n, bool drop_remainder) : in_(std::move(in)), n_(n), drop_(drop_remainder) {
        if (n < 1) typeflow::detail::raise(typeflow::detail::message() << "data::batch: batch size must be at least 1, got " << n);
    }

    std::unique_ptr<cursor<E>> start() const override { return std::make_unique<pass>(in_->start(), n_, drop_); }
    index_t cardinality() const override {
        const index_t c = in_->cardinality();
        if (c < 0) return c;
        return drop_ ? c / n_ : (c + n_ - 1) / n_;
    }

private:
    class pass final : public cursor<E> {
    public:
        pass(std::unique_ptr<cursor<E>> in, index_t n, bool drop) : in_(std::move(in)), n_(n), drop_(drop) {}

        bool next(E& out) override {
            if (done_ || !in_->next(first_)) return false;
            // The batch goes straight into out's tensors when nobody else
            // holds them: no allocation in the steady state.
            size_like_first(out);
            copy_row(out, 0, first_, "data::batch");
            index_t rows = 1;
            while (rows < n_ && in_->next_into(out, rows)) ++rows;
            if (rows == n_) return true;
            done_ = true;
            if (drop_) return false;
            shrink(out, rows);
            return true;
        }

    private:
        void size_like_first(E& out) {
            [&]<std::size_t... I>(std::index_sequence<I...>) {
                if (((std::get<I>(first_).rank() >= max_rank) || ...))
                    typeflow::detail::raise(typeflow::detail::message()
                                            << "data::batch: an element's component has rank " << max_rank
                                            << ", so a batch of it would exceed typeflow::max_rank");
                (reuse_or_allocate(std::get<I>(out), with_leading(n_, std::get<I>(first_).dims())), ...);
            }(std::make_index_sequence<std::tuple_size_v<E>>{});
        }
        // The last, partial batch: a new tensor of `rows` rows per component.
        static void shrink(E& out, index_t rows) {
            [&]<std::size_t... I>(std::index_sequence<I...>) {
                (shrink_one(std::get<I>(out), rows), ...);
            }(std::make_index_sequence<std::tuple_size_v<E>>{});
        }
        template <class T>
        static void shrink_one(tensor<T>& t, index_t rows) {
            dims d = t.dims();
            const std::size_t n = static_cast<std::size_t>(row_dims(d).numel()) * static_cast<std::size_t>(rows);
            d.d[0] = rows;
            tensor<T> s(d);
            if (n) std::memcpy(static_cast<void*>(s.data()), t.data(), n * sizeof(T));
            t = std::move(s);
        }

        std::unique_ptr<cursor<E>> in_;
        index_t n_;
        bool drop_;
        bool done_ = false;
        E first_{};
    };

    stage_ptr<E> in_;
    index_t n_;
    bool drop_;
};

}  // namespace typeflow::data::detail

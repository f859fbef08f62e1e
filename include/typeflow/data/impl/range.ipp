// typeflow/data/impl/range.ipp — the counting source (see data/range.hpp): inline in
// header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION (typeflow/src.hpp).
#pragma once
#include <memory>
#include <tuple>

#include <typeflow/core/message.hpp>
#include <typeflow/data/range.hpp>
#include <typeflow/data/stage.hpp>

namespace typeflow::data {

namespace detail {

/// The stage of range: int64 scalars.
class range_stage final : public stage<std::tuple<tensor<std::int64_t>>> {
    using E = std::tuple<tensor<std::int64_t>>;

public:
    range_stage(index_t start, index_t stop, index_t step) : start_(start), stop_(stop), step_(step) {
        if (step == 0) typeflow::detail::raise(typeflow::detail::message() << "data::range: step must not be 0");
    }
    std::unique_ptr<cursor<E>> start() const override { return std::make_unique<pass>(*this); }
    index_t cardinality() const override {
        if (step_ > 0) return stop_ > start_ ? (stop_ - start_ + step_ - 1) / step_ : 0;
        return start_ > stop_ ? (start_ - stop_ - step_ - 1) / -step_ : 0;
    }

private:
    class pass final : public cursor<E> {
    public:
        explicit pass(const range_stage& s) : v_(s.start_), left_(s.cardinality()), step_(s.step_) {}
        bool next(E& out) override {
            if (left_ == 0) return false;
            reuse_or_allocate(std::get<0>(out), dims{});
            std::get<0>(out)[0] = v_;
            advance();
            return true;
        }
        bool next_into(E& batch, index_t row) override {
            if (left_ == 0) return false;
            if (std::get<0>(batch).rank() != 1)
                typeflow::detail::raise(typeflow::detail::message()
                                        << "data::batch: component 0 of element " << row
                                        << " of a batch has shape [] where the batch's first has "
                                        << row_dims(std::get<0>(batch).dims()));
            std::get<0>(batch)[row] = v_;
            advance();
            return true;
        }
        bool skip() override {
            if (left_ == 0) return false;
            advance();
            return true;
        }

    private:
        void advance() {
            v_ += step_;
            --left_;
        }
        index_t v_, left_, step_;
    };

    index_t start_, stop_, step_;
};

}  // namespace detail

/// The int64 scalars start, start + step, ... up to but excluding stop.
TYPEFLOW_DECL dataset<std::int64_t> range(index_t start, index_t stop, index_t step) {
    return dataset<std::int64_t>(std::make_shared<detail::range_stage>(start, stop, step));
}
/// The int64 scalars 0, 1, ..., n - 1.
TYPEFLOW_DECL dataset<std::int64_t> range(index_t n) { return range(0, n, 1); }

}  // namespace typeflow::data

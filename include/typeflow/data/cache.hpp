// typeflow/data/cache.hpp — the cache stage: the first complete pass is
// kept in memory, and later passes read it instead of the input.
#pragma once
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <typeflow/data/element.hpp>
#include <typeflow/data/stage.hpp>

namespace typeflow::data::detail {

/// The stage of cache().
template <class E>
class cache_stage final : public stage<E> {
public:
    explicit cache_stage(stage_ptr<E> in) : in_(std::move(in)) {}

    std::unique_ptr<cursor<E>> start() const override {
        std::shared_ptr<const std::vector<E>> full;
        {
            std::lock_guard<std::mutex> lock(m_);
            full = full_;
        }
        if (full) return std::make_unique<reading>(std::move(full));
        return std::make_unique<filling>(*this, in_->start());
    }
    index_t cardinality() const override {
        std::lock_guard<std::mutex> lock(m_);
        return full_ ? static_cast<index_t>(full_->size()) : in_->cardinality();
    }
    std::shared_ptr<const indexed<E>> indexed_view() const override {
        std::lock_guard<std::mutex> lock(m_);
        if (!full_) return nullptr;
        return std::make_shared<view>(full_);
    }

private:
    // A pass over the input that copies each element it hands on; a pass
    // that reaches the end publishes the copies (one left unfinished
    // discards them).
    class filling final : public cursor<E> {
    public:
        filling(const cache_stage& owner, std::unique_ptr<cursor<E>> in) : owner_(owner), in_(std::move(in)) {}
        bool next(E& out) override {
            if (!in_->next(out)) {
                publish();
                return false;
            }
            items_.push_back(clone(out));
            return true;
        }

    private:
        void publish() {
            if (!in_) return;
            in_.reset();
            auto full = std::make_shared<const std::vector<E>>(std::move(items_));
            std::lock_guard<std::mutex> lock(owner_.m_);
            if (!owner_.full_) owner_.full_ = std::move(full);
        }
        const cache_stage& owner_;
        std::unique_ptr<cursor<E>> in_;
        std::vector<E> items_;
    };

    // A pass over the cached elements. Elements are copied out (into the
    // consumer's storage when it can be reused), so a consumer that writes
    // into its tensors never changes the cache.
    class reading final : public cursor<E> {
    public:
        explicit reading(std::shared_ptr<const std::vector<E>> items) : items_(std::move(items)) {}
        bool next(E& out) override {
            if (i_ == items_->size()) return false;
            assign_copy(out, (*items_)[i_++]);
            return true;
        }
        bool next_into(E& batch, index_t row) override {
            if (i_ == items_->size()) return false;
            copy_row(batch, row, (*items_)[i_++], "data::batch");
            return true;
        }
        bool skip() override {
            if (i_ == items_->size()) return false;
            ++i_;
            return true;
        }

    private:
        std::shared_ptr<const std::vector<E>> items_;
        std::size_t i_ = 0;
    };

    // Random access to the cached elements.
    class view final : public indexed<E> {
    public:
        explicit view(std::shared_ptr<const std::vector<E>> items) : items_(std::move(items)) {}
        index_t size() const override { return static_cast<index_t>(items_->size()); }
        void get(index_t i, E& out) const override { assign_copy(out, (*items_)[static_cast<std::size_t>(i)]); }
        void get_into(index_t i, E& batch, index_t row) const override {
            copy_row(batch, row, (*items_)[static_cast<std::size_t>(i)], "data::batch");
        }

    private:
        std::shared_ptr<const std::vector<E>> items_;
    };

    stage_ptr<E> in_;
    mutable std::mutex m_;
    mutable std::shared_ptr<const std::vector<E>> full_;
};

}  // namespace typeflow::data::detail

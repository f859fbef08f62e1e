// typeflow/data/take.hpp — stages that select elements by position: take
// (the first n), skip (all but the first n) and shard (every k-th).
#pragma once
#include <algorithm>
#include <memory>
#include <utility>

#include <typeflow/core/message.hpp>
#include <typeflow/data/element.hpp>
#include <typeflow/data/stage.hpp>

namespace typeflow::data::detail {

/// The stage of take(n): at most the first n elements; n -1 takes all.
template <class E>
class take_stage final : public stage<E> {
public:
    take_stage(stage_ptr<E> in, index_t n) : in_(std::move(in)), n_(n < 0 ? -1 : n) {}

    std::unique_ptr<cursor<E>> start() const override { return std::make_unique<pass>(in_->start(), n_); }
    index_t cardinality() const override {
        const index_t c = in_->cardinality();
        if (n_ < 0) return c;
        if (c == infinite_cardinality) return n_;
        if (c == unknown_cardinality) return n_ == 0 ? 0 : unknown_cardinality;
        return std::min(c, n_);
    }

private:
    class pass final : public cursor<E> {
    public:
        pass(std::unique_ptr<cursor<E>> in, index_t n) : in_(std::move(in)), left_(n) {}
        bool next(E& out) override { return left_ != 0 && count(in_->next(out)); }
        bool next_into(E& batch, index_t row) override { return left_ != 0 && count(in_->next_into(batch, row)); }
        bool skip() override { return left_ != 0 && count(in_->skip()); }

    private:
        bool count(bool got) {
            if (!got) left_ = 0;
            else if (left_ > 0) --left_;
            return got;
        }
        std::unique_ptr<cursor<E>> in_;
        index_t left_;  // -1: no limit
    };

    stage_ptr<E> in_;
    index_t n_;
};

/// The stage of skip(n): the elements after the first n; n -1 skips all.
template <class E>
class skip_stage final : public stage<E> {
public:
    skip_stage(stage_ptr<E> in, index_t n) : in_(std::move(in)), n_(n < 0 ? -1 : n) {}

    std::unique_ptr<cursor<E>> start() const override { return std::make_unique<pass>(in_->start(), n_); }
    index_t cardinality() const override {
        const index_t c = in_->cardinality();
        if (c == infinite_cardinality) return n_ < 0 ? 0 : c;
        if (c == unknown_cardinality) return n_ < 0 ? 0 : c;
        return n_ < 0 ? 0 : std::max<index_t>(0, c - n_);
    }

private:
    class pass final : public cursor<E> {
    public:
        pass(std::unique_ptr<cursor<E>> in, index_t n) : in_(std::move(in)), skip_(n) {}
        bool next(E& out) override { return ready() && in_->next(out); }
        bool next_into(E& batch, index_t row) override { return ready() && in_->next_into(batch, row); }
        bool skip() override { return ready() && in_->skip(); }

    private:
        bool ready() {
            if (skip_ < 0) return false;
            for (; skip_ > 0; --skip_)
                if (!in_->skip()) {
                    skip_ = -1;
                    return false;
                }
            return true;
        }
        std::unique_ptr<cursor<E>> in_;
        index_t skip_;  // -1: skip everything
    };

    stage_ptr<E> in_;
    index_t n_;
};

/// The stage of shard(num_shards, index): the elements at positions
/// index, index + num_shards, index + 2 num_shards, ...
template <class E>
class shard_stage final : public stage<E> {
public:
    shard_stage(stage_ptr<E> in, index_t num_shards, index_t index) : in_(std::move(in)), k_(num_shards), i_(index) {
        if (num_shards < 1)
            typeflow::detail::raise(typeflow::detail::message()
                                    << "data::shard: num_shards must be at least 1, got " << num_shards);
        if (index < 0 || index >= num_shards)
            typeflow::detail::raise(typeflow::detail::message() << "data::shard: index " << index
                                                                << " is outside [0, " << num_shards << ")");
    }

    std::unique_ptr<cursor<E>> start() const override { return std::make_unique<pass>(in_->start(), k_, i_); }
    index_t cardinality() const override {
        const index_t c = in_->cardinality();
        if (c < 0) return c;
        return c / k_ + (i_ < c % k_ ? 1 : 0);
    }

private:
    class pass final : public cursor<E> {
    public:
        pass(std::unique_ptr<cursor<E>> in, index_t k, index_t i) : in_(std::move(in)), k_(k), pending_(i) {}
        bool next(E& out) override { return ready() && taken(in_->next(out)); }
        bool next_into(E& batch, index_t row) override { return ready() && taken(in_->next_into(batch, row)); }
        bool skip() override { return ready() && taken(in_->skip()); }

    private:
        // Passes over the elements of the other shards before ours.
        bool ready() {
            if (end_) return false;
            for (; pending_ > 0; --pending_)
                if (!in_->skip()) return taken(false);
            return true;
        }
        bool taken(bool got) {
            if (!got) end_ = true;
            pending_ = k_ - 1;
            return got;
        }
        std::unique_ptr<cursor<E>> in_;
        index_t k_;
        index_t pending_;
        bool end_ = false;
    };

    stage_ptr<E> in_;
    index_t k_, i_;
};

}  // namespace typeflow::data::detail

// typeflow/data/repeat.hpp — the repeat stage: the input's passes one after
// another, a given number of times or forever.
#pragma once
#include <memory>
#include <utility>

#include <typeflow/data/element.hpp>
#include <typeflow/data/stage.hpp>

namespace typeflow::data::detail {

/// The stage of repeat(count); count -1 repeats forever.
template <class E>
class repeat_stage final : public stage<E> {
public:
    repeat_stage(stage_ptr<E> in, index_t count) : in_(std::move(in)), count_(count < 0 ? -1 : count) {}

    std::unique_ptr<cursor<E>> start() const override { return std::make_unique<pass>(*in_, count_); }
    index_t cardinality() const override {
        const index_t c = in_->cardinality();
        if (count_ == 0 || c == 0) return 0;
        if (c == unknown_cardinality) return unknown_cardinality;
        if (count_ < 0 || c == infinite_cardinality) return infinite_cardinality;
        return c * count_;
    }

private:
    class pass final : public cursor<E> {
    public:
        pass(const stage<E>& in, index_t count) : in_(in), count_(count) {}
        bool next(E& out) override {
            return step([&](cursor<E>& c) { return c.next(out); });
        }
        bool next_into(E& batch, index_t row) override {
            return step([&](cursor<E>& c) { return c.next_into(batch, row); });
        }
        bool skip() override {
            return step([](cursor<E>& c) { return c.skip(); });
        }

    private:
        // g(cursor) on the current pass of the input, starting the next pass
        // when one ends.
        template <class G>
        bool step(G g) {
            for (;;) {
                if (!cur_) {
                    if (count_ >= 0 && started_ >= count_) return false;
                    cur_ = in_.start();
                    ++started_;
                    yielded_ = false;
                }
                if (g(*cur_)) {
                    yielded_ = true;
                    return true;
                }
                cur_.reset();
                // An empty pass would be followed by empty passes forever.
                if (!yielded_ && count_ < 0) return false;
            }
        }

        const stage<E>& in_;
        index_t count_;
        index_t started_ = 0;
        bool yielded_ = false;
        std::unique_ptr<cursor<E>> cur_;
    };

    stage_ptr<E> in_;
    index_t count_;
};

}  // namespace typeflow::data::detail

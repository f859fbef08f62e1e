// typeflow/data/shuffle.hpp — the shuffle stage: TensorFlow's buffered
// shuffle, reproducible from a seed, a new order on every pass.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include <typeflow/core/message.hpp>
#include <typeflow/data/element.hpp>
#include <typeflow/data/stage.hpp>

namespace typeflow::data::detail {

/// SplitMix64's output function: a well-mixed 64-bit value of x.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/// A uniform integer in [0, n), n > 0, from a 64-bit engine (Lemire's
/// multiply-and-reject method: the same on every platform, unlike
/// std::uniform_int_distribution).
inline std::uint64_t uniform_below(std::mt19937_64& g, std::uint64_t n) noexcept {
    unsigned __int128 m = static_cast<unsigned __int128>(g()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
        const std::uint64_t threshold = (0 - n) % n;
        while (low < threshold) {
            m = static_cast<unsigned __int128>(g()) * n;
            low = static_cast<std::uint64_t>(m);
        }
    }
    return static_cast<std::uint64_t>(m >> 64);
}

/// The stage of shuffle(buffer_size, seed, reshuffle_each_iteration).
template <class E>
class shuffle_stage final : public stage<E> {
public:
    shuffle_stage(stage_ptr<E> in, index_t buffer_size, std::uint64_t seed, bool reshuffle)
        : in_(std::move(in)), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {
        if (buffer_size < 1)
            typeflow::detail::raise(typeflow::detail::message()
                                    << "data::shuffle: buffer_size must be at least 1, got " << buffer_size);
    }

    std::unique_ptr<cursor<E>> start() const override {
        // Pass k draws from a stream of its own, derived from the seed and k:
        // every pass has a new order, and the orders repeat from run to run.
        const std::uint64_t pass_no = reshuffle_ ? passes_.fetch_add(1, std::memory_order_relaxed) : 0;
        const std::uint64_t seed = mix64(mix64(seed_) ^ mix64(~pass_no));
        // Stored elements: shuffle their indices (the same draws, so the same
        // order), and copy each element once, from its place.
        if (auto ix = in_->indexed_view()) return std::make_unique<index_pass>(std::move(ix), buffer_size_, seed);
        return std::make_unique<pass>(in_->start(), buffer_size_, seed);
    }
    index_t cardinality() const override { return in_->cardinality(); }

private:
    class pass final : public cursor<E> {
    public:
        pass(std::unique_ptr<cursor<E>> in, index_t buffer_size, std::uint64_t seed)
            : in_(std::move(in)), cap_(static_cast<std::size_t>(buffer_size)), rng_(seed) {}

        bool next(E& out) override {
            if (!pick()) return false;
            std::swap(out, buf_[at_]);
            refill();
            return true;
        }
        bool next_into(E& batch, index_t row) override {
            if (!pick()) return false;
            copy_row(batch, row, buf_[at_], "data::batch");
            refill();
            return true;
        }

    private:
        // Fills the buffer on the first call, then chooses the slot to emit.
        bool pick() {
            if (!filled_) {
                filled_ = true;
                // Grow the buffer as elements come, so a large buffer_size over
                // a short dataset costs only what the dataset holds.
                while (!in_done_ && buf_.size() < cap_) {
                    buf_.emplace_back();
                    if (!in_->next(buf_.back())) {
                        buf_.pop_back();
                        in_done_ = true;
                    }
                }
            }
            if (buf_.empty()) return false;
            at_ = static_cast<std::size_t>(uniform_below(rng_, buf_.size()));
            return true;
        }
        // Replaces the emitted slot with the next input element, or removes
        // it when the input is exhausted. The slot's old tensors (the
        // consumer's previous element, after next's swap) are reused.
        void refill() {
            if (!in_done_ && in_->next(buf_[at_])) return;
            in_done_ = true;
            if (at_ + 1 != buf_.size()) std::swap(buf_[at_], buf_.back());
            buf_.pop_back();
        }

        std::unique_ptr<cursor<E>> in_;
        std::size_t cap_;
        std::mt19937_64 rng_;
        std::vector<E> buf_;
        std::size_t at_ = 0;
        bool filled_ = false;
        bool in_done_ = false;
    };

    // The same algorithm over the indices of stored elements.
    class index_pass final : public cursor<E> {
    public:
        index_pass(std::shared_ptr<const indexed<E>> src, index_t buffer_size, std::uint64_t seed)
            : src_(std::move(src)), n_(src_->size()), cap_(static_cast<std::size_t>(buffer_size)), rng_(seed) {}

        bool next(E& out) override {
            if (!pick()) return false;
            src_->get(buf_[at_], out);
            refill();
            return true;
        }
        bool next_into(E& batch, index_t row) override {
            if (!pick()) return false;
            src_->get_into(buf_[at_], batch, row);
            refill();
            return true;
        }
        bool skip() override {
            if (!pick()) return false;
            refill();
            return true;
        }

    private:
        bool pick() {
            if (!filled_) {
                filled_ = true;
                buf_.reserve(static_cast<std::size_t>(n_) < cap_ ? static_cast<std::size_t>(n_) : cap_);
                while (next_ < n_ && buf_.size() < cap_) buf_.push_back(next_++);
            }
            if (buf_.empty()) return false;
            at_ = static_cast<std::size_t>(uniform_below(rng_, buf_.size()));
            return true;
        }
        void refill() {
            if (next_ < n_) {
                buf_[at_] = next_++;
                return;
            }
            if (at_ + 1 != buf_.size()) std::swap(buf_[at_], buf_.back());
            buf_.pop_back();
        }

        std::shared_ptr<const indexed<E>> src_;
        index_t n_;
        std::size_t cap_;
        std::mt19937_64 rng_;
        std::vector<index_t> buf_;
        index_t next_ = 0;
        std::size_t at_ = 0;
        bool filled_ = false;
    };

    stage_ptr<E> in_;
    index_t buffer_size_;
    std::uint64_t seed_;
    bool reshuffle_;
    mutable std::atomic<std::uint64_t> passes_{0};
};

}  // namespace typeflow::data::detail

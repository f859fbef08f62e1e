// typeflow/data/prefetch.hpp — the prefetch stage: a background thread
// keeps up to n elements of the input ready while the consumer works.
#pragma once
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <typeflow/core/message.hpp>
#include <typeflow/data/element.hpp>
#include <typeflow/data/stage.hpp>

namespace typeflow::data::detail {

/// The stage of prefetch(n).
template <class E>
class prefetch_stage final : public stage<E> {
public:
    prefetch_stage(stage_ptr<E> in, index_t n) : in_(std::move(in)), n_(n) {
        if (n < 1) typeflow::detail::raise(typeflow::detail::message() << "data::prefetch: buffer size must be at least 1, got " << n);
    }

    std::unique_ptr<cursor<E>> start() const override { return std::make_unique<pass>(in_->start(), n_); }
    index_t cardinality() const override { return in_->cardinality(); }

private:
    // The producer thread runs the input's cursor and fills a ring of n
    // slots; the consumer swaps its previous element into the slot it takes,
    // so the producer writes into storage the consumer gave back.
    class pass final : public cursor<E> {
    public:
        pass(std::unique_ptr<cursor<E>> in, index_t n)
            : in_(std::move(in)), ring_(static_cast<std::size_t>(n)), worker_([this] { produce(); }) {}
        pass(const pass&) = delete;
        pass& operator=(const pass&) = delete;
        ~pass() override {
            {
                std::lock_guard<std::mutex> lock(m_);
                stop_ = true;
            }
            can_put_.notify_all();
            worker_.join();  // waits at most for the input's current element
        }

        bool next(E& out) override {
            std::unique_lock<std::mutex> lock(m_);
            can_take_.wait(lock, [&] { return count_ > 0 || end_; });
            if (count_ > 0) {
                std::swap(out, ring_[head_]);
                head_ = (head_ + 1) % ring_.size();
                --count_;
                lock.unlock();
                can_put_.notify_one();
                return true;
            }
            // Elements produced before an error reach the consumer first;
            // then the error, once.
            if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
            return false;
        }

    private:
        void produce() {
            E slot{};
            try {
                for (;;) {
                    {
                        std::lock_guard<std::mutex> lock(m_);
                        if (stop_) break;
                    }
                    if (!in_->next(slot)) break;
                    std::unique_lock<std::mutex> lock(m_);
                    can_put_.wait(lock, [&] { return stop_ || count_ < ring_.size(); });
                    if (stop_) break;
                    std::swap(slot, ring_[(head_ + count_) % ring_.size()]);
                    ++count_;
                    lock.unlock();
                    can_take_.notify_one();
                }
            } catch (...) {
                std::lock_guard<std::mutex> lock(m_);
                error_ = std::current_exception();
            }
            {
                std::lock_guard<std::mutex> lock(m_);
                end_ = true;
            }
            can_take_.notify_all();
        }

        std::unique_ptr<cursor<E>> in_;
        std::mutex m_;
        std::condition_variable can_take_, can_put_;
        std::vector<E> ring_;
        std::size_t head_ = 0, count_ = 0;
        bool stop_ = false, end_ = false;
        std::exception_ptr error_;
        std::thread worker_;  // last: starts once the members above exist
    };

    stage_ptr<E> in_;
    index_t n_;
};

}  // namespace typeflow::data::detail

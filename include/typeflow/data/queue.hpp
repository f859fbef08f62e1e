// typeflow/data/queue.hpp — bounded queues of tensor tuples shared between
// threads (TensorFlow's FIFOQueue, RandomShuffleQueue and PriorityQueue), and
// a queue runner that keeps one filled from a tf::data pipeline or a function
// on background threads.
//
//   tf::fifo_queue<float, std::int32_t> q(100);          // up to 100 (image, label) pairs
//   tf::queue_runner feed(q, train_dataset);             // a thread enqueues the dataset, then closes q
//   auto [x, y] = q.dequeue_many(64);                    // a batch of 64, stacked on a new axis 0
//
// A full queue blocks its producers (back pressure) and an empty one its
// consumers. close() ends the queue: later enqueues fail with
// tf::cancelled_error, and so do enqueues already waiting; dequeues take
// what is left and then fail with tf::out_of_range_error (TensorFlow's
// OutOfRangeError), never hang. Every waiting thread wakes at once.
//
// An element is a std::tuple<tf::tensor<T>...>. enqueue keeps the tensors it
// is given (tf::tensor copies share storage, as TensorFlow's and PyTorch's
// do): do not write into a tensor after enqueueing it. enqueue_many copies
// its rows.
#pragma once
#include <algorithm>
#include <atomic>
#include <concepts>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/data/dataset.hpp>

namespace typeflow {

/// An enqueue into a closed queue, or one cancelled by close() while it
/// waited (TensorFlow's CancelledError).
class cancelled_error : public error {
public:
    using error::error;
};
/// A dequeue from a closed queue that holds fewer elements than it needs
/// (TensorFlow's OutOfRangeError): the end of the data.
class out_of_range_error : public error {
public:
    using error::error;
};

namespace detail {

// Orders: which element a dequeue takes. Each keeps elements of type E.
template <class E>
struct fifo_order {
    std::deque<E> items;
    index_t size() const noexcept { return static_cast<index_t>(items.size()); }
    void push(E e) { items.push_back(std::move(e)); }
    E pop() {
        E e = std::move(items.front());
        items.pop_front();
        return e;
    }
    // puts back what a failed dequeue_many took, at the front, in order
    void restore(std::vector<E>& taken) {
        for (auto it = taken.rbegin(); it != taken.rend(); ++it) items.push_front(std::move(*it));
    }
};
template <class E>
struct shuffle_order {
    std::vector<E> items;
    std::mt19937_64 rng;
    index_t size() const noexcept { return static_cast<index_t>(items.size()); }
    void push(E e) { items.push_back(std::move(e)); }
    // a uniformly chosen element; the last one takes its place
    E pop() {
        const std::size_t i = std::uniform_int_distribution<std::size_t>(0, items.size() - 1)(rng);
        E e = std::move(items[i]);
        if (i + 1 != items.size()) items[i] = std::move(items.back());
        items.pop_back();
        return e;
    }
    void restore(std::vector<E>& taken) {
        for (auto& e : taken) items.push_back(std::move(e));
    }
};
// Smallest priority (the first component, a scalar int64) first; equal
// priorities leave in the order they came.
template <class E>
struct priority_order {
    struct entry {
        std::int64_t priority;
        std::int64_t seq;
        E value;
    };
    std::vector<entry> heap;
    std::int64_t next_seq = 0, restored_seq = 0;
    static bool after(const entry& a, const entry& b) noexcept {
        return a.priority != b.priority ? a.priority > b.priority : a.seq > b.seq;
    }
    index_t size() const noexcept { return static_cast<index_t>(heap.size()); }
    void push(E e) {
        const std::int64_t p = std::get<0>(e)[0];
        heap.push_back(entry{p, next_seq++, std::move(e)});
        std::push_heap(heap.begin(), heap.end(), after);
    }
    E pop() {
        std::pop_heap(heap.begin(), heap.end(), after);
        E e = std::move(heap.back().value);
        heap.pop_back();
        return e;
    }
    // put back ahead of every element of equal priority, in their order
    void restore(std::vector<E>& taken) {
        restored_seq -= static_cast<std::int64_t>(taken.size());
        std::int64_t seq = restored_seq;
        for (auto& e : taken) {
            const std::int64_t p = std::get<0>(e)[0];
            heap.push_back(entry{p, seq++, std::move(e)});
            std::push_heap(heap.begin(), heap.end(), after);
        }
    }
};

}  // namespace detail

/// A bounded queue of elements std::tuple<tf::tensor<T>...>, safe to use
/// from any number of producer and consumer threads. Order decides which
/// element a dequeue takes (fifo_queue, random_shuffle_queue,
/// priority_queue are the queues to use).
template <class Order, value_type_c... T>
class basic_queue {
    static_assert(sizeof...(T) > 0, "typeflow: queue: an element has at least one component");

public:
    using element = std::tuple<tensor<T>...>;
    static constexpr std::size_t components = sizeof...(T);

    basic_queue(const basic_queue&) = delete;
    basic_queue& operator=(const basic_queue&) = delete;

    /// Adds one element, waiting while the queue is full. A tf::error when a
    /// component's shape differs from the queue's; tf::cancelled_error when
    /// the queue is closed (or is closed while this waits).
    void enqueue(element e) {
        check_shapes(e, false, "enqueue");
        std::unique_lock<std::mutex> lock(m_);
        wait_for_room(lock, "enqueue");
        order_.push(std::move(e));
        lock.unlock();
        can_take_.notify_all();
    }
    /// Adds one element built from the components.
    void enqueue(tensor<T>... components) { enqueue(element(std::move(components)...)); }

    /// Adds each row of the components (axis 0, one extent for all) as an
    /// element, in order, waiting for room as enqueue does. Rows enqueued
    /// before a close stay in the queue.
    void enqueue_many(const element& batch) {
        check_shapes(batch, true, "enqueue_many");
        const index_t n = std::get<0>(batch).dims().d[0];
        for (index_t r = 0; r < n; ++r) {
            element e = [&]<std::size_t... I>(std::index_sequence<I...>) {
                return element(row_of(std::get<I>(batch), r)...);
            }(std::index_sequence_for<T...>{});
            std::unique_lock<std::mutex> lock(m_);
            wait_for_room(lock, "enqueue_many");
            order_.push(std::move(e));
            lock.unlock();
            can_take_.notify_all();
        }
    }

    /// Takes one element, waiting while there is none to take.
    /// tf::out_of_range_error once the queue is closed and empty.
    element dequeue() {
        std::unique_lock<std::mutex> lock(m_);
        wait_to_take(lock, 0, 1, "dequeue");
        element e = order_.pop();
        lock.unlock();
        can_put_.notify_all();
        return e;
    }
    /// Takes n elements at once and stacks each component on a new axis 0.
    /// Waits until n can be taken; tf::out_of_range_error when the queue is
    /// closed with fewer than n left (they stay in the queue).
    element dequeue_many(index_t n) { return take_many(n, false, "dequeue_many"); }
    /// As dequeue_many, but a closed queue hands out what it has left (at
    /// least one element): the last, smaller batch of the data.
    element dequeue_up_to(index_t n) { return take_many(n, true, "dequeue_up_to"); }

    /// Ends the queue: enqueues fail from now on and dequeues take what is
    /// left. With cancel_pending_enqueues (the default), enqueues waiting for
    /// room fail at once too; with false they still complete as room frees
    /// (TensorFlow's default). Every waiting consumer wakes.
    void close(bool cancel_pending_enqueues = true) {
        {
            std::lock_guard<std::mutex> lock(m_);
            closed_ = true;
            if (cancel_pending_enqueues) cancelled_ = true;
        }
        can_put_.notify_all();
        can_take_.notify_all();
    }

    bool is_closed() const {
        std::lock_guard<std::mutex> lock(m_);
        return closed_;
    }
    /// The elements in the queue now.
    index_t size() const {
        std::lock_guard<std::mutex> lock(m_);
        return order_.size();
    }
    index_t capacity() const noexcept { return capacity_; }
    const std::string& name() const noexcept { return name_; }
    /// The shape the queue requires of component k, if it declares one.
    const std::optional<dims>& declared_shape(std::size_t k) const { return shapes_.at(k); }

protected:
    /// shapes: one per component, or none; an extent `dyn` matches any.
    basic_queue(index_t capacity, const std::vector<dims>& shapes, std::string name, Order order)
        : order_(std::move(order)), capacity_(capacity), shapes_(components), name_(std::move(name)) {
        if (capacity < 1)
            detail::raise(detail::message() << "queue '" << name_ << "': capacity must be at least 1, got " << capacity);
        if (!shapes.empty() && shapes.size() != components)
            detail::raise(detail::message() << "queue '" << name_ << "': " << static_cast<long long>(shapes.size())
                                            << " shapes given for " << static_cast<long long>(components)
                                            << " components");
        for (std::size_t k = 0; k < shapes.size(); ++k) shapes_[k] = shapes[k];
    }
    // component k's shape is checked (a priority queue's priority is a scalar)
    void require_shape(std::size_t k, const dims& d) { shapes_[k] = d; }
    // Consumers wait until more than `keep` elements remain (a shuffle
    // queue's min_after_dequeue) unless the queue is closed.
    index_t keep_ = 0;

private:
    // row r of a tensor whose axis 0 is the batch axis, copied
    template <class U>
    static tensor<U> row_of(const tensor<U>& t, index_t r) {
        tensor<U> row(data::detail::row_dims(t.dims()));
        const std::size_t n = static_cast<std::size_t>(row.size());
        if (n) std::memcpy(static_cast<void*>(row.data()), t.data() + static_cast<std::size_t>(r) * n, n * sizeof(U));
        return row;
    }
    // Every component's extents against the queue's shapes (with a leading
    // batch axis for enqueue_many, whose extent all components share).
    void check_shapes(const element& e, bool batched, const char* what) const {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (check_one(std::get<I>(e), I, batched, std::get<0>(e).dims(), what), ...);
        }(std::index_sequence_for<T...>{});
    }
    template <class U>
    void check_one(const tensor<U>& t, std::size_t k, bool batched, const dims& first, const char* what) const {
        if (t.empty())
            detail::raise(detail::message() << "queue '" << name_ << "': " << what << ": component "
                                            << static_cast<long long>(k) << " is an empty tensor (no storage)");
        dims d = t.dims();
        if (batched) {
            if (d.rank == 0 || first.rank == 0 || d.d[0] != first.d[0])
                detail::raise(detail::message() << "queue '" << name_ << "': " << what << ": component "
                                                << static_cast<long long>(k) << " has shape " << d
                                                << "; every component needs the batch axis of component 0, "
                                                << first);
            d = data::detail::row_dims(d);
        }
        if (!shapes_[k]) return;
        const dims& want = *shapes_[k];
        bool ok = want.rank == d.rank;
        for (std::size_t a = 0; ok && a < d.rank; ++a) ok = want.d[a] == dyn || want.d[a] == d.d[a];
        if (!ok)
            detail::raise(detail::message() << "queue '" << name_ << "': " << what << ": component "
                                            << static_cast<long long>(k) << " has shape " << d << ", the queue's is "
                                            << want);
    }
    void wait_for_room(std::unique_lock<std::mutex>& lock, const char* what) {
        if (closed_) raise_closed(what);
        can_put_.wait(lock, [&] { return cancelled_ || order_.size() < capacity_; });
        if (cancelled_) raise_closed(what);
    }
    [[noreturn]] void raise_closed(const char* what) const {
        detail::message m;
        m << "queue '" << name_ << "': " << what << ": the queue is closed";
        throw cancelled_error(std::string(m.view()));
    }
    // Waits until an element can be taken: more than keep_ in the queue, or
    // the queue closed and not empty. A closed, empty queue raises.
    void wait_to_take(std::unique_lock<std::mutex>& lock, index_t got, index_t n, const char* what) {
        can_take_.wait(lock, [&] { return closed_ || order_.size() > keep_; });
        if (order_.size() > 0) return;
        detail::message m;
        m << "queue '" << name_ << "': " << what << ": the queue is closed and holds " << got << " element(s), " << n
          << " needed";
        throw out_of_range_error(std::string(m.view()));
    }
    // Takes elements as they come until it has n (so n may exceed the
    // capacity, as in TensorFlow). A queue closed before then: dequeue_up_to
    // returns what it took; dequeue_many puts it back and raises.
    element take_many(index_t n, bool up_to, const char* what) {
        if (n < 1) detail::raise(detail::message() << "queue '" << name_ << "': " << what << ": n must be at least 1, got " << n);
        std::vector<element> taken;
        taken.reserve(static_cast<std::size_t>(std::min(n, capacity_)));
        {
            std::unique_lock<std::mutex> lock(m_);
            while (static_cast<index_t>(taken.size()) < n) {
                const index_t got = static_cast<index_t>(taken.size());
                try {
                    wait_to_take(lock, got, n, what);
                } catch (const out_of_range_error&) {
                    if (up_to && got > 0) break;
                    order_.restore(taken);
                    throw;
                }
                const index_t k = std::min(n - got, closed_ ? order_.size() : order_.size() - keep_);
                for (index_t i = 0; i < k; ++i) {
                    taken.push_back(order_.pop());
                    if (const std::size_t c = differing_component(taken.front(), taken.back()); c < components) {
                        const dims a = dims_of(taken.front(), c), b = dims_of(taken.back(), c);
                        order_.restore(taken);
                        detail::raise(detail::message()
                                      << "queue '" << name_ << "': " << what << ": component "
                                      << static_cast<long long>(c) << " has shape " << b << " in one element and " << a
                                      << " in another, so they cannot be stacked (give the queue shapes so that "
                                         "enqueue checks them); the elements stay in the queue");
                    }
                }
                lock.unlock();
                can_put_.notify_all();
                lock.lock();
            }
        }
        // stacked on a new axis 0 (the extents were checked as elements were taken)
        const index_t k = static_cast<index_t>(taken.size());
        element out = [&]<std::size_t... I>(std::index_sequence<I...>) {
            return element(tensor<T>(data::detail::with_leading(k, std::get<I>(taken.front()).dims()))...);
        }(std::index_sequence_for<T...>{});
        for (index_t r = 0; r < k; ++r) data::detail::copy_row(out, r, taken[static_cast<std::size_t>(r)], what);
        return out;
    }
    // the first component whose extents differ between a and b (components if none)
    static std::size_t differing_component(const element& a, const element& b) {
        std::size_t c = components;
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            ((c == components && !(std::get<I>(a).dims() == std::get<I>(b).dims()) ? void(c = I) : void()), ...);
        }(std::index_sequence_for<T...>{});
        return c;
    }
    static dims dims_of(const element& e, std::size_t c) {
        dims d;
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            ((I == c ? void(d = std::get<I>(e).dims()) : void()), ...);
        }(std::index_sequence_for<T...>{});
        return d;
    }
    mutable std::mutex m_;
    std::condition_variable can_put_, can_take_;
    Order order_;
    index_t capacity_;
    std::vector<std::optional<dims>> shapes_;
    std::string name_;
    bool closed_ = false, cancelled_ = false;
};

/// First in, first out (TensorFlow's FIFOQueue).
template <value_type_c... T>
class fifo_queue : public basic_queue<detail::fifo_order<std::tuple<tensor<T>...>>, T...> {
public:
    /// capacity: the most elements it holds; shapes: one per component, or
    /// none (then dequeue_many needs elements of one shape).
    explicit fifo_queue(index_t capacity, const std::vector<dims>& shapes = {}, std::string name = "fifo_queue")
        : fifo_queue::basic_queue(capacity, shapes, std::move(name), {}) {}
};

/// Dequeues a uniformly chosen element (TensorFlow's RandomShuffleQueue):
/// a consumer waits until more than min_after_dequeue elements are in the
/// queue, so each pick is from a well-mixed pool, until the queue is closed.
/// The picks are reproducible for a seed when one thread dequeues.
template <value_type_c... T>
class random_shuffle_queue : public basic_queue<detail::shuffle_order<std::tuple<tensor<T>...>>, T...> {
public:
    random_shuffle_queue(index_t capacity, index_t min_after_dequeue, std::uint64_t seed = 0,
                         const std::vector<dims>& shapes = {}, std::string name = "random_shuffle_queue")
        : random_shuffle_queue::basic_queue(capacity, shapes, std::move(name),
                                            detail::shuffle_order<std::tuple<tensor<T>...>>{{}, std::mt19937_64(seed)}) {
        if (min_after_dequeue < 0 || min_after_dequeue >= capacity)
            detail::raise(detail::message() << "random_shuffle_queue '" << this->name()
                                            << "': min_after_dequeue must be in [0, capacity), got " << min_after_dequeue
                                            << " with capacity " << capacity);
        this->keep_ = min_after_dequeue;
    }
};

/// Dequeues the element of smallest priority first (TensorFlow's
/// PriorityQueue); elements of equal priority leave in the order they came.
/// The first component is the priority, a scalar std::int64_t.
template <value_type_c... T>
class priority_queue : public basic_queue<detail::priority_order<std::tuple<tensor<std::int64_t>, tensor<T>...>>,
                                          std::int64_t, T...> {
    using base = basic_queue<detail::priority_order<std::tuple<tensor<std::int64_t>, tensor<T>...>>, std::int64_t, T...>;

public:
    /// shapes: one per component after the priority, or none.
    explicit priority_queue(index_t capacity, const std::vector<dims>& shapes = {}, std::string name = "priority_queue")
        : base(capacity, with_priority(shapes), std::move(name), {}) {
        this->require_shape(0, dims{});
    }

private:
    static std::vector<dims> with_priority(const std::vector<dims>& shapes) {
        if (shapes.empty()) return {};
        if (shapes.size() != sizeof...(T))
            detail::raise(detail::message() << "priority_queue: " << static_cast<long long>(shapes.size())
                                            << " shapes given for " << static_cast<long long>(sizeof...(T))
                                            << " components after the priority");
        std::vector<dims> all{dims{}};
        all.insert(all.end(), shapes.begin(), shapes.end());
        return all;
    }
};

/// Keeps a queue filled on background threads (TensorFlow's QueueRunner):
/// from one pass over a tf::data dataset, or from a function that each of n
/// threads calls until it returns std::nullopt. When the data ends, the
/// queue is closed (pending enqueues still complete), so consumers take the
/// rest and then get tf::out_of_range_error. When a producer throws, the
/// queue is closed at once and join() rethrows the exception. Destroying the
/// runner, or stop(), closes the queue and waits for its threads.
class queue_runner {
public:
    /// n threads call `produce` (returning std::optional<Q::element>) and
    /// enqueue each element it gives.
    template <class Q, class F>
        requires requires(F& f) {
            { f() } -> std::convertible_to<std::optional<typename Q::element>>;
        }
    queue_runner(Q& q, F produce, int threads = 1) : close_([&q](bool cancel) { q.close(cancel); }) {
        if (threads < 1)
            detail::raise(detail::message() << "queue_runner: threads must be at least 1, got " << threads);
        live_ = threads;
        auto fn = std::make_shared<F>(std::move(produce));
        std::lock_guard<std::mutex> lock(m_);  // the threads wait for the vector to be complete
        for (int i = 0; i < threads; ++i)
            threads_.emplace_back([this, &q, fn] {
                run([&] {
                    while (std::optional<typename Q::element> e = (*fn)()) q.enqueue(std::move(*e));
                });
            });
    }
    /// One thread enqueues the elements of one pass over `ds`.
    template <class Q, value_type_c... T>
    queue_runner(Q& q, data::dataset<T...> ds) : close_([&q](bool cancel) { q.close(cancel); }) {
        live_ = 1;
        std::lock_guard<std::mutex> lock(m_);
        threads_.emplace_back([this, &q, ds = std::move(ds)] {
            run([&] {
                for (const auto& e : ds) q.enqueue(e);  // a copy sharing the pass's tensors: the pass then allocates anew
            });
        });
    }
    queue_runner(const queue_runner&) = delete;
    queue_runner& operator=(const queue_runner&) = delete;
    ~queue_runner() { stop(); }

    /// Waits for the producers to finish (the end of the data); rethrows the
    /// first exception a producer threw.
    void join() {
        std::vector<std::thread> ts;
        {
            std::lock_guard<std::mutex> lock(m_);
            ts.swap(threads_);
        }
        for (auto& t : ts)
            if (t.joinable()) t.join();
        std::lock_guard<std::mutex> lock(m_);
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }
    /// Closes the queue (cancelling waiting enqueues) and waits for the
    /// producers; an exception a producer threw is dropped.
    void stop() noexcept {
        stopping_ = true;
        close_(true);
        try {
            join();
        } catch (...) {
        }
    }

private:
    template <class Body>
    void run(const Body& body) {
        { std::lock_guard<std::mutex> lock(m_); }  // the constructor has finished filling threads_
        try {
            body();
        } catch (const cancelled_error&) {
            // the queue was closed under us: a stop, or another producer's failure
        } catch (...) {
            {
                std::lock_guard<std::mutex> lock(m_);
                if (!error_ && !stopping_) error_ = std::current_exception();
            }
            close_(true);
        }
        if (--live_ == 0) close_(false);  // the last producer ends the data
    }

    std::function<void(bool)> close_;
    std::mutex m_;
    std::vector<std::thread> threads_;
    std::exception_ptr error_;
    std::atomic<int> live_{0};
    std::atomic<bool> stopping_{false};
};

}  // namespace typeflow

// typeflow/data/dataset.hpp — tf::data::dataset: a sequence of elements
// (tuples of tensors) built from a source and fluent transformations, and
// iterated with range-for, one pass per loop.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <tuple>
#include <utility>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/data/batch.hpp>
#include <typeflow/data/cache.hpp>
#include <typeflow/data/element.hpp>
#include <typeflow/data/map.hpp>
#include <typeflow/data/prefetch.hpp>
#include <typeflow/data/repeat.hpp>
#include <typeflow/data/shuffle.hpp>
#include <typeflow/data/stage.hpp>
#include <typeflow/data/take.hpp>

namespace typeflow::data {

template <value_type_c... T>
class dataset;

namespace detail {
template <class E>
struct dataset_of;
template <value_type_c... T>
struct dataset_of<std::tuple<tensor<T>...>> {
    using type = dataset<T...>;
};
}  // namespace detail

/// The dataset whose elements are E (a std::tuple of tf::tensor).
template <class E>
using dataset_of = typename detail::dataset_of<E>::type;

/// A sequence of elements, each a std::tuple<tf::tensor<T>...>, like
/// TensorFlow's tf.data.Dataset. A dataset is an immutable description:
/// transformations return new datasets that share it, and copies are cheap.
/// Each range-for over it (each begin()) is a new pass, so epochs are loops:
///
///     auto train = data::from_tensors(images, labels).shuffle(10000, 42).batch(64);
///     for (int epoch = 0; epoch < 10; ++epoch)
///         for (auto& [x, y] : train) s.run(step, tf::feed(xp, x), tf::feed(yp, y));
///
/// The element a pass hands out is overwritten by the next one unless the
/// caller keeps a copy of its tensors (copies share storage; keep a tensor,
/// not a view): a pass reuses storage nobody else holds, so a steady-state
/// loop allocates little.
template <value_type_c... T>
class dataset {
    static_assert(sizeof...(T) > 0, "typeflow: data::dataset: an element has at least one component");

public:
    /// The type of one element.
    using element_type = std::tuple<tensor<T>...>;
    /// The number of tensors in an element.
    static constexpr std::size_t components = sizeof...(T);

    /// The end of a pass.
    struct sentinel {};

    /// One pass over a dataset (an input iterator). Dereferencing gives the
    /// current element; the pass's storage lives in the iterator.
    class iterator {
    public:
        using value_type = element_type;
        using reference = element_type&;
        using difference_type = std::ptrdiff_t;
        using iterator_concept = std::input_iterator_tag;

        iterator() = default;
        iterator(iterator&&) noexcept = default;
        iterator& operator=(iterator&&) noexcept = default;

        /// The current element.
        element_type& operator*() const noexcept { return st_->current; }
        element_type* operator->() const noexcept { return &st_->current; }
        /// Moves to the next element (into the same storage when possible).
        iterator& operator++();
        void operator++(int) { ++*this; }
        /// True at the end of the pass.
        friend bool operator==(const iterator& i, sentinel) noexcept { return !i.st_; }

    private:
        friend class dataset;
        struct state {
            detail::stage_ptr<element_type> stage;  // keeps every stage of the pipeline alive
            std::unique_ptr<detail::cursor<element_type>> cursor;
            element_type current{};
        };
        explicit iterator(const detail::stage_ptr<element_type>& s);
        std::unique_ptr<state> st_;
    };

    /// An empty dataset.
    dataset() = default;
    /// A dataset over a stage (for sources; see from_tensors, read_idx, from_csv).
    explicit dataset(detail::stage_ptr<element_type> s) : stage_(std::move(s)) {}

    /// Starts a new pass.
    iterator begin() const;
    sentinel end() const noexcept { return {}; }

    /// The number of elements of one pass; infinite_cardinality (-1) after
    /// repeat() of a non-empty dataset, unknown_cardinality (-2) where only
    /// iterating can tell (after filter).
    index_t cardinality() const;

    /// f applied to each element. f takes the element (`const element_type&`,
    /// or by value) or its components (`(const tensor<float>& x, const
    /// tensor<int>& y)`), and returns a tensor or a std::tuple of tensors,
    /// which are the new elements. f may be called from a prefetch thread.
    template <class F>
    auto map(F f) const {
        static_assert(detail::callable_on_element_v<F, element_type>,
                      "typeflow: data::map: the function must be callable as const (no mutable lambda) with "
                      "the element (a std::tuple of tf::tensor) or with one argument per component");
        using out = detail::map_result_t<F, element_type>;
        return dataset_of<out>(std::make_shared<detail::map_stage<element_type, out, F>>(checked(), std::move(f)));
    }

    /// The elements for which pred (called like map's function) is true.
    template <class P>
    dataset filter(P pred) const {
        static_assert(detail::callable_on_element_v<P, element_type>,
                      "typeflow: data::filter: the predicate must be callable as const with the element or "
                      "with one argument per component");
        return dataset(std::make_shared<detail::filter_stage<element_type, P>>(checked(), std::move(pred)));
    }

    /// TensorFlow's buffered shuffle: a buffer of buffer_size elements, from
    /// which each output is drawn at random and replaced by the next input.
    /// buffer_size >= the cardinality shuffles uniformly. The order is a
    /// function of seed (a random seed when none is given) and, with
    /// reshuffle_each_iteration, of how many passes the dataset has started:
    /// every epoch has a new order, the same from run to run.
    dataset shuffle(index_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                    bool reshuffle_each_iteration = true) const;

    /// Consecutive groups of n elements stacked into tensors with a leading
    /// axis of extent n (elements must have one shape). The last group may
    /// be smaller, unless drop_remainder drops it.
    dataset batch(index_t n, bool drop_remainder = false) const;

    /// The passes of this dataset, count times one after the other; -1 (the
    /// default) repeats forever.
    dataset repeat(index_t count = -1) const;

    /// The first n elements (all of them when n is -1).
    dataset take(index_t n) const;

    /// The elements after the first n (none when n is -1).
    dataset skip(index_t n) const;

    /// Every num_shards-th element starting at index: the part of the data
    /// of worker `index` among num_shards.
    dataset shard(index_t num_shards, index_t index) const;

    /// Keeps the first complete pass in memory; later passes read it and
    /// skip everything before cache() (so a map before it runs once per
    /// element, not once per epoch).
    dataset cache() const;

    /// Produces up to n elements ahead on a background thread, so that the
    /// work before prefetch overlaps the consumer's. An exception thrown
    /// there reaches the consumer after the elements produced before it.
    dataset prefetch(index_t n) const;

    /// The dataset of from_tensors(t...) (data/from_tensors.hpp, which defines it).
    static dataset from_slices(const tensor<T>&... t);

    /// The stage under this dataset (null for an empty one).
    const detail::stage_ptr<element_type>& stage() const noexcept { return stage_; }

private:
    // An empty dataset transforms as a source of no elements.
    detail::stage_ptr<element_type> checked() const;
    struct empty_stage final : detail::stage<element_type> {
        struct none final : detail::cursor<element_type> {
            bool next(element_type&) override { return false; }
        };
        std::unique_ptr<detail::cursor<element_type>> start() const override { return std::make_unique<none>(); }
        index_t cardinality() const override { return 0; }
    };

    detail::stage_ptr<element_type> stage_;
};

// The members' definitions, out of the class: not inline, so that the
// element types data/instances.hpp declares compile once (typeflow/src.hpp),
// with their stages, under TYPEFLOW_SEPARATE_COMPILATION.
template <value_type_c... T>
typename dataset<T...>::iterator& dataset<T...>::iterator::operator++() {
    if (!st_->cursor->next(st_->current)) st_.reset();
    return *this;
}
template <value_type_c... T>
dataset<T...>::iterator::iterator(const detail::stage_ptr<element_type>& s) {
    if (!s) return;
    st_ = std::make_unique<state>();
    st_->stage = s;
    st_->cursor = s->start();
    ++*this;
}
template <value_type_c... T>
typename dataset<T...>::iterator dataset<T...>::begin() const {
    return iterator(stage_);
}
template <value_type_c... T>
index_t dataset<T...>::cardinality() const {
    return stage_ ? stage_->cardinality() : 0;
}
template <value_type_c... T>
dataset<T...> dataset<T...>::shuffle(index_t buffer_size, std::optional<std::uint64_t> seed,
                                     bool reshuffle_each_iteration) const {
    const std::uint64_t s = seed ? *seed : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    return dataset(std::make_shared<detail::shuffle_stage<element_type>>(checked(), buffer_size, s, reshuffle_each_iteration));
}
template <value_type_c... T>
dataset<T...> dataset<T...>::batch(index_t n, bool drop_remainder) const {
    return dataset(std::make_shared<detail::batch_stage<element_type>>(checked(), n, drop_remainder));
}
template <value_type_c... T>
dataset<T...> dataset<T...>::repeat(index_t count) const {
    return dataset(std::make_shared<detail::repeat_stage<element_type>>(checked(), count));
}
template <value_type_c... T>
dataset<T...> dataset<T...>::take(index_t n) const {
    return dataset(std::make_shared<detail::take_stage<element_type>>(checked(), n));
}
template <value_type_c... T>
dataset<T...> dataset<T...>::skip(index_t n) const {
    return dataset(std::make_shared<detail::skip_stage<element_type>>(checked(), n));
}
template <value_type_c... T>
dataset<T...> dataset<T...>::shard(index_t num_shards, index_t index) const {
    return dataset(std::make_shared<detail::shard_stage<element_type>>(checked(), num_shards, index));
}
template <value_type_c... T>
dataset<T...> dataset<T...>::cache() const {
    return dataset(std::make_shared<detail::cache_stage<element_type>>(checked()));
}
template <value_type_c... T>
dataset<T...> dataset<T...>::prefetch(index_t n) const {
    return dataset(std::make_shared<detail::prefetch_stage<element_type>>(checked(), n));
}
template <value_type_c... T>
detail::stage_ptr<typename dataset<T...>::element_type> dataset<T...>::checked() const {
    if (stage_) return stage_;
    return std::make_shared<empty_stage>();
}

}  // namespace typeflow::data

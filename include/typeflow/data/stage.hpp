// typeflow/data/stage.hpp — the run-time protocol between the stages of a
// tf::data pipeline: a stage is an immutable node (a source or a
// transformation of another stage); each pass over it is a cursor.
#pragma once
#include <memory>

#include <typeflow/core/shape.hpp>
#include <typeflow/data/element.hpp>

namespace typeflow::data::detail {

/// One pass over a stage, producing elements of type E in order.
template <class E>
class cursor {
public:
    virtual ~cursor() = default;

    /// Produces the next element into `out` and returns true, or returns
    /// false at the end. `out` holds an element its caller no longer needs:
    /// a stage may write into its tensors when nobody else holds them.
    virtual bool next(E& out) = 0;

    /// Writes the next element into row `row` of the batch tensors `batch`
    /// (whose rows have the first element's extents); false at the end.
    /// Sources override it to copy straight into the batch.
    virtual bool next_into(E& batch, index_t row) {
        if (!next(spare_)) return false;
        copy_row(batch, row, spare_, "data::batch");
        return true;
    }

    /// Passes over the next element; false at the end.
    virtual bool skip() { return next(spare_); }

protected:
    /// Storage for the default next_into and skip.
    E spare_{};
};

/// Random access to the elements of a stage whose elements are stored
/// (from_tensors, a filled cache): shuffle draws indices instead of moving
/// elements through its buffer.
template <class E>
class indexed {
public:
    virtual ~indexed() = default;
    /// The count of elements.
    virtual index_t size() const = 0;
    /// Copies element i into out (reusing its storage when nobody else holds it).
    virtual void get(index_t i, E& out) const = 0;
    /// Copies element i into row `row` of the batch tensors.
    virtual void get_into(index_t i, E& batch, index_t row) const = 0;
};

/// A node of a pipeline: immutable once built, shared by the datasets made
/// from it, and started any number of times (each start is a new pass).
template <class E>
class stage {
public:
    virtual ~stage() = default;
    /// A new pass from the first element.
    virtual std::unique_ptr<cursor<E>> start() const = 0;
    /// The count of elements of one pass, infinite_cardinality or unknown_cardinality.
    virtual index_t cardinality() const = 0;
    /// Random access to the elements a pass would produce, in pass order,
    /// or null when the stage has none.
    virtual std::shared_ptr<const indexed<E>> indexed_view() const { return nullptr; }
};

template <class E>
using stage_ptr = std::shared_ptr<const stage<E>>;

}  // namespace typeflow::data::detail

#pragma once
// typeflow's input pipelines, tf::data (namespace typeflow::data): datasets
// of tuples of tensors from memory, IDX and CSV files, with map, filter,
// shuffle, batch, repeat, take, skip, shard, cache and prefetch, and the
// queues that threads share (data/queue.hpp). Run-time
// objects, outside the graph types (docs/design.md). Reading gzip-compressed
// files needs TYPEFLOW_HAVE_ZLIB and zlib (data/file.hpp).
#include <typeflow/data/batch.hpp>
#include <typeflow/data/cache.hpp>
#include <typeflow/data/csv.hpp>
#include <typeflow/data/dataset.hpp>
#include <typeflow/data/element.hpp>
#include <typeflow/data/file.hpp>
#include <typeflow/data/from_tensors.hpp>
#include <typeflow/data/idx.hpp>
#include <typeflow/data/instances.hpp>
#include <typeflow/data/map.hpp>
#include <typeflow/data/mnist.hpp>
#include <typeflow/data/prefetch.hpp>
#include <typeflow/data/queue.hpp>
#include <typeflow/data/queue_ops.hpp>
#include <typeflow/data/range.hpp>
#include <typeflow/data/repeat.hpp>
#include <typeflow/data/shuffle.hpp>
#include <typeflow/data/stage.hpp>
#include <typeflow/data/take.hpp>

// Compile-fail cases of gather, embedding_lookup, indexed_slices
// (expr/ops/gather.hpp) and the embedding layer (layers/embedding.hpp): each
// TF_FAIL_<name> block is one misuse that must not compile; the first error
// line must name the op and the shapes, dtypes or devices
// (gather_cases.cmake beside this file). Without a define, everything here
// compiles: that is the positive control.
#include <typeflow/models.hpp>  // first: the checks' precompiled header (tests/CMakeLists.txt)
#include <typeflow/layers/embedding.hpp>
#include <typeflow/models/functional.hpp>
#include <typeflow/typeflow.hpp>

#include <cstdint>

namespace tf = typeflow;

int main() {
    tf::placeholder<"p", float, tf::shape<5, 3>> p;
    tf::placeholder<"s", float, tf::shape<>> s;
    tf::placeholder<"r8", float, tf::shape<2, 2, 2, 2, 2, 2, 2, 2>> r8;
    tf::placeholder<"ids", std::int32_t, tf::shape<tf::dyn, 2>> ids;
    tf::placeholder<"ids1", std::int64_t, tf::shape<tf::dyn>> ids1;
    tf::placeholder<"fids", float, tf::shape<tf::dyn, 2>> fids;
    tf::placeholder<"rids", std::int32_t, tf::shape<tf::dyn, 2>, tf::reference> rids;
    tf::placeholder<"v", float, tf::shape<tf::dyn, 2, 3>> v;
    tf::placeholder<"v4", float, tf::shape<tf::dyn, 2, 4>> v4;
    tf::placeholder<"vd", double, tf::shape<tf::dyn, 2, 3>> vd;

    // the valid twins of the cases below
    auto ok_gather = tf::gather(p, ids);
    auto ok_axis = tf::gather<1>(p, ids1);
    auto ok_index_dtype = tf::gather<-1>(p, tf::cast<std::int32_t>(fids));
    auto ok_scalar = tf::embedding_lookup(tf::gather(p, ids1), tf::literal<std::int32_t, 0>{});
    auto ok_rank = tf::gather(r8, ids1);
    auto ok_device = tf::gather(p, tf::to<tf::cpu>(rids));
    auto ok_slices = tf::indexed_slices(p, v, ids) + tf::indexed_slices(p, tf::cast<float>(vd), ids);
    tf::layers::layer<"emb", tf::layers::embedding<10, 4>> emb;
    auto ok_embedding = emb(ids, tf::inference);
    (void)ok_gather, (void)ok_axis, (void)ok_index_dtype, (void)ok_scalar, (void)ok_rank, (void)ok_device;
    (void)ok_slices, (void)ok_embedding;

#ifdef TF_FAIL_gather_index_dtype
    auto bad = tf::gather(p, fids);  // float indices
#endif
#ifdef TF_FAIL_gather_axis
    auto bad = tf::gather<2>(p, ids);  // p has axes 0 and 1
#endif
#ifdef TF_FAIL_gather_scalar_params
    auto bad = tf::embedding_lookup(s, ids);  // nothing to gather from a scalar
#endif
#ifdef TF_FAIL_gather_rank
    auto bad = tf::gather(r8, ids);  // rank 8 - 1 + 2 = 9
#endif
#ifdef TF_FAIL_gather_device
    auto bad = tf::gather(p, rids);
#endif
#ifdef TF_FAIL_gather_slices_shape
    auto bad = tf::indexed_slices(p, v4, ids);  // rows of 4, p's rows have 3
#endif
#ifdef TF_FAIL_gather_slices_dtype
    auto bad = tf::indexed_slices(p, vd, ids);
#endif
#ifdef TF_FAIL_gather_slices_index_dtype
    auto bad = tf::indexed_slices(p, v, fids);
#endif
#ifdef TF_FAIL_gather_embedding_dims
    tf::layers::embedding<0, 4> bad;  // an empty vocabulary
#endif
#ifdef TF_FAIL_gather_embedding_float_ids
    auto bad = emb(fids, tf::inference);  // ids must be integers
#endif
#if defined(TF_FAIL_gather_index_dtype) || defined(TF_FAIL_gather_axis) || defined(TF_FAIL_gather_scalar_params) ||    \
    defined(TF_FAIL_gather_rank) || defined(TF_FAIL_gather_device) || defined(TF_FAIL_gather_slices_shape) ||          \
    defined(TF_FAIL_gather_slices_dtype) || defined(TF_FAIL_gather_slices_index_dtype) ||                              \
    defined(TF_FAIL_gather_embedding_dims) || defined(TF_FAIL_gather_embedding_float_ids)
    (void)bad;
#endif
}

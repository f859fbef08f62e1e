// typeflow/runtime/plan.hpp — the execution plan of one set of fetches.
//
// The compile-time graph (graph/topo.hpp) is turned into data: one
// node_desc per distinct node (flags, static extents, and a few small
// functions keyed on that node's type alone: identity, children, leaf data,
// extent rule, kernel), the edge list, and one loop per fused
// region. Everything else (walking the node objects, extents, the memory
// plan, the evaluation loop, assign writes) is the plain C++ of plan_core,
// compiled once per program. Code emitted per node therefore never carries
// the whole graph's type, and compile time grows with the number of distinct
// nodes, not with nodes x graph size.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <tuple>

#include <typeflow/core/config.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/pod_vector.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/expr/diagnostics.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/ops/outputs.hpp>
#include <typeflow/graph/topo.hpp>
#include <typeflow/kernel/kernel.hpp>
#include <typeflow/kernel/region.hpp>
#include <typeflow/runtime/checks.hpp>
#include <typeflow/runtime/feed.hpp>
#include <typeflow/runtime/memory_plan.hpp>

namespace typeflow::runtime {

/// What the last run did.
struct run_stats {
    std::size_t evaluations = 0;  // materialised nodes computed (kernels and fused regions)
    std::size_t plans_built = 0;  // plans made for new fetch sets (this session, in all)
    std::size_t rebinds = 0;      // re-plans for new dyn extents (this session, in all)
    std::size_t arena_bytes = 0;  // intermediate memory of the plan that ran
    std::size_t recordings = 0;   // device work recorded for replay (this session, in all)
    std::size_t replays = 0;      // runs whose device work was a replayed recording (this session, in all)
    std::size_t recorded_loops = 0;  // while loops that wrote the rows of their gradient's scan (the scan did not run)
};

class plan_base {
public:
    virtual ~plan_base() = default;
};

/// Told, during a run, that fetch `fetch`'s value is final: `data` holds its
/// elements (the result tensor's, returned when the run ends).
struct ready_hook {
    void (*fn)(void* ctx, std::size_t fetch, const void* data) = nullptr;
    void* ctx = nullptr;
};

/// How a node's extents follow from its children's.
enum class extent_rule : std::uint8_t {
    leaf,       // static extents, or the feed's for a placeholder
    function,   // node_desc::infer
    broadcast,  // numpy broadcast of every child (element-wise ops)
    last,       // the last child's (element-wise ops with control inputs)
    assign,     // the variable's (child 0), after checking that child 1 fits
    output,     // output K of a multi-output node (child 0)
};

struct node_desc;
/// The loop of a fused region on its device (its root's entry in a plan's region table).
using region_fn_t = void (*)(const region::layout&, const void* const*, void*, const parallel_ctx&);

/// The compile-time tables of one graph (graph/topo.hpp made data): what a
/// plan runs, and what a tf::expr carries of the expression it hides.
struct subgraph {
    const node_desc* const* descs = nullptr;
    const region_fn_t* regions = nullptr;  // per node: the loop of the fused region it roots, or null
    const graph::node_flags* flags = nullptr;
    std::size_t n = 0;  // nodes, children before parents; the last is the root
    const graph::edge* edges = nullptr;
    std::size_t n_edges = 0;
    const std::size_t* first_edge = nullptr;  // node i's edges: edges[first_edge[i]] .. edges[first_edge[i + 1] - 1]
};

/// A tf::expr's internals as plain data (not owning): its state (whose one
/// slot holds the hidden expression) and its graph.
struct erased_graph;
struct expr_ref {
    typeflow::detail::node_state* state = nullptr;
    const erased_graph* g = nullptr;
};
class grad_sink;
/// A tf::expr's vector-Jacobian product: from the root object of the hidden
/// expression and the adjoints flowing into the tf::expr (seeds), adds the
/// adjoints of the hidden graph's variables, placeholders and tf::expr leaves
/// to `out`.
using backward_fn = void (*)(const void* root, const expr_ref* seeds, std::size_t n, grad_sink& out);
/// What a tf::expr points to: its hidden expression's graph (first member:
/// a subgraph pointer converts to it) and vector-Jacobian product (null when
/// the expression cannot be differentiated through).
struct erased_graph {
    subgraph g;
    backward_fn backward = nullptr;
};

/// One distinct node of a plan: what the runtime needs of it, fixed at compile time.
struct node_desc {
    op_kind kind = op_kind::leaf;
    bool pure = true;
    bool placeholder = false;
    bool variable = false;
    bool scalar = false;  // one element by its static shape
    bool conditional = false;  // a cond: children pred, then, else (only the taken branch's own nodes run)
    std::uint8_t loop = 0;     // 1 while_loop, 2 scan: children var, counter, body, cond, limit
    extent_rule rule = extent_rule::leaf;
    std::size_t children = 0;
    std::size_t control_inputs = 0;
    std::size_t elem_size = 0;
    dtype type = dtype::float32;
    dims static_dims{};     // the static shape (dyn extents as -1)
    std::string_view name;  // the leaf's name, or the op's
    const void* feed_key = nullptr;  // placeholders: matched against feed_ref::key
    const void* (*identity)(const void*) = nullptr;
    void (*children_of)(const void*, const void**) = nullptr;  // addresses of the children objects
    const void* (*data)(const void*) = nullptr;               // leaves (not placeholders): current elements
    dims (*leaf_dims)(const void*) = nullptr;  // leaves whose extents their object gives at run time
    dims (*infer)(const dims* const*) = nullptr;               // rule == function
    bool (*forwards)(const dims* const*) = nullptr;  // kernel nodes: true when the result is child 0 as is (aliased)
    void (*eval)(const kernel_ctx&, void*) = nullptr;  // kernel nodes
    void (*eval_epilogue)(const kernel_ctx&, void*, const epilogue&) = nullptr;  // kernels with run_epilogue
    std::size_t (*workspace)(const kernel_ctx&) = nullptr;  // kernel nodes that ask for scratch memory
    std::size_t outputs = 1;                // results a kernel node computes
    const std::size_t* output_sizes = nullptr;  // outputs > 1: bytes per element of each
    dims (*infer_output)(std::size_t k, const dims* const*) = nullptr;  // outputs > 1: extents of output k >= 1
    std::size_t output_index = 0;           // rule == output: which output of child 0
    const memory_space* memory = nullptr;  // the memory space of the node's device
    // variables on a device with memory of its own: their copy there (see mirror_use)
    void* (*mirror)(const void* obj, const memory_space* m, int use) = nullptr;
    void* (*make_state)() = nullptr;        // kernel nodes with state kept across runs
    void (*free_state)(void*) = nullptr;
    bool replayable = true;  // kernel nodes: a recording of the kernel's queued work may be replayed
    bool bias_grad_epilogue = false;  // kernels with run_epilogue that also take bias_grad
    bool sums_matrix_rows = false;    // ops that, on a matrix giving a vector, sum its rows (sum<0>, sum_like)
    epilogue_role epilogue = epilogue_role::none;  // element-wise ops a matmul's epilogue can compute
    // kernels that write children [writes_first, writes_end) where they are (sparse_apply: a
    // variable and its slots); on a device, their copies there become the newer ones
    std::uint32_t writes_first = 0, writes_end = 0;
    // a tf::expr: the graph it hides and the object of that graph's root
    const subgraph* (*expand)(const void* obj, const void** root) = nullptr;
    // leaves that name a node built elsewhere (a while loop's functions: the
    // scan its gradient recomputes the loop with), its identity, or null
    const void* (*linked)(const void* obj) = nullptr;
};

/// One feed of a run, type-erased.
struct feed_ref {
    const void* key = nullptr;
    std::string_view name;  // the placeholder's
    dims extents{};
    const void* data = nullptr;
};

/// What a fetch's result tensor can do, type-erased (keyed on the element type).
struct result_fns {
    void* (*prepare)(void* t, const dims& d);  // a tensor of extents d that the caller does not share; its elements
    void (*reset)(void* t);
    void (*share)(void* dst, const void* src);
};

/// Runs a graph described by node descriptors. Plain C++: compiled once per
/// program, whatever the graphs. A tf::expr leaf is expanded into the graph it
/// hides (one segment per distinct tf::expr object, before its readers), so
/// the plan runs one merged table.
class plan_core : public plan_base {
public:
    /// Whether runs whose device work can be recorded (a GPU's CUDA graph) are
    /// recorded once and replayed (session_options::replay; on by default).
    void allow_replay(bool on) noexcept { replay_ = on; }
    /// Runs from now on compute only what the first k fetches need: nothing
    /// else runs, no other update is written, and the other fetches' results
    /// are empty (k at least the fetch count: everything, as by default). One
    /// plan then serves a training step and an evaluation of its first fetches.
    void keep_fetches(std::size_t k) noexcept { keep_ = k; }

protected:
    plan_core(const subgraph& top, const parallel_ctx& par);
    ~plan_core() override;

    /// Registers fetch `node` (a node of the top graph; object `obj`).
    void add_fetch(std::size_t node, const void* obj, void* result, const result_fns* fns);
    /// Ends construction: expands tf::expr leaves, registers the objects below
    /// the fetches, plans the fused regions' operands.
    void finish();
    /// One run: feeds checked before anything changes, then compute, copy, write.
    /// With a hook, each fetch is reported once its value is final: a computed
    /// one right after its node, a fetched leaf or view after the last node.
    void run_core(run_stats& stats, const feed_ref* feeds, std::size_t n_feeds, const ready_hook* hook = nullptr);

private:
    struct instance {
        std::uint32_t node = 0;
        const void* obj = nullptr;  // the node object (any of them, for a pure node)
        const void* id = nullptr;   // its identity
        std::uint32_t first_child = 0;    // into child_refs_
        std::uint32_t first_operand = 0;  // into operand_refs_ (fused region roots)
        std::uint32_t operands = 0;
        void* buf = nullptr;        // its value, for a materialised node
        const void* ptr = nullptr;  // its elements in this run
        std::uint32_t next = ~std::uint32_t{0};  // the node's next instance, or none
        std::uint32_t first_extra = 0;  // a multi-output node: its outputs 1.. in extra_dims_ / extra_off_
        std::uint32_t scope = ~std::uint32_t{0};  // the innermost loop whose variable or counter it reads (loop_scope::loop), or none
    };
    // A loop whose children walk() is visiting: its key (a pure loop's node, or
    // a number past the nodes for another), and its variable's and counter's nodes.
    struct loop_scope {
        std::uint32_t loop = 0, var = 0, counter = 0;
    };
    struct fetch {
        std::size_t node = 0;
        const void* obj = nullptr;
        const void* id = nullptr;  // null for a pure node (identified by its type)
        void* result = nullptr;  // the tensor<T> returned for it
        const result_fns* fns = nullptr;
        std::size_t primary = 0;  // the first fetch of the same node
        std::uint32_t inst = 0;   // its instance
        void* data = nullptr;     // the result's elements in this run
    };
    // a graph in the merged table: a tf::expr's (segments before their readers) or the top one (last)
    struct segment {
        const subgraph* g = nullptr;
        std::size_t offset = 0;
        const void* root = nullptr;  // the object of its root (a tf::expr's hidden expression)
    };
    // a tf::expr leaf met in the graph of a segment and the segment it expands to (provisional numbers)
    struct expansion_use {
        std::uint32_t reader = 0;  // the segment that reads it
        std::uint32_t node = 0;    // its node in that segment's graph
        std::uint32_t seg = 0;     // the segment it expands to
    };
    static constexpr std::uint32_t none = ~std::uint32_t{0};

    std::size_t child_node(std::size_t i, std::size_t j) const { return edges_[first_edge_[i] + j].child; }
    std::uint32_t child_ref(const instance& in, std::size_t j) const { return child_refs_[in.first_child + j]; }
    bool is_region_root(std::size_t i) const {
        return desc_[i]->kind == op_kind::elementwise && flags_[i].materialized;
    }
    // materialised nodes that a kernel or fused region computes
    bool computed(std::size_t i) const {
        return flags_[i].materialized && desc_[i]->kind != op_kind::leaf && desc_[i]->kind != op_kind::view;
    }
    std::size_t bytes_of(std::uint32_t k) const {
        return static_cast<std::size_t>(dims_[k].numel()) * desc_[insts_[k].node]->elem_size;
    }

    // ---- construction ----
    // finds the tf::expr objects below the fetches (read by the top graph, provisional number
    // `top`) and makes their segments, each after the segments it reads
    void discover(std::uint32_t top);
    // the merged tables of all segments
    void merge();
    // registers node objects (each distinct one once), checks variable names
    std::uint32_t walk(std::size_t i, const void* obj);
    // the operands of a fused region: leaves and materialised nodes below its root, in order
    void collect_operands(std::uint32_t k);
    bool is_fetched_instance(std::size_t i, const void* id) const;

    // ---- planning for a binding of the dyn extents ----
    void rebind();
    // The step after which each node's value is no longer read. A fused node is
    // read when the root of its region runs; a view's readers read its
    // source; fetched views and leaves are copied out after the last step.
    void compute_last_reads();
    // what a view or a forwarding kernel aliases lives as long as the view or kernel
    void extend_aliased();

    // ---- results: a result the caller still holds is left alone (copy on write) ----
    void prepare_results();
    // a fetch's result could not be allocated: a tf::error naming the node and the bytes
    [[noreturn]] void result_failed(const fetch& f) const;

    // an assign's value goes into its variable (child 0)
    void write(std::size_t i, const instance& in);
    // ---- a bias (and ReLU) computed by the matmul before it (kernel::run_epilogue) ----
    // A matmul instance m whose only reader is region root r = add(m, b) or
    // relu(add(m, b)) (the add fused), with b a vector ready before m: in a
    // binding where m is 2-D and r and b fit, m's kernel computes r's value
    // into m's buffer and r reads as m (its readers see m's buffer).
    // Or (grad) a matmul(a, g) and a later r = sum<0>(g) or sum_like(g, b)
    // summing g over its rows: m's kernel computes r's value into r's buffer, which the
    // memory plan makes live from m's step, and r does not run.
    struct epilogue_pair {
        std::uint32_t m = 0, r = 0, bias = 0;
        bool relu = false;
        bool grad = false;
        bool on = false;  // in this binding
    };
    void plan_epilogues();
    typeflow::detail::pod_vector<epilogue_pair> epis_;
    typeflow::detail::pod_vector<std::uint32_t> epi_at_;  // per instance: its pair in epis_ (m or r), or none
    // step 5 of a run: every computed instance, in order; true when locked updates wait for step 7
    bool compute_all(run_stats& stats, const ready_hook* hook);
    // which nodes the first keep_ fetches need (active_), when keep_ is below the fetch count
    bool partial() const noexcept { return keep_ < fetches_.size(); }
    bool active(std::size_t i) const noexcept { return !partial() || active_[i]; }
    void mark_active();
    std::size_t keep_ = ~std::size_t{0}, active_for_ = ~std::size_t{0};
    typeflow::detail::pod_vector<std::uint8_t> active_;

    // ---- a run's device work recorded once and replayed (memory_space::begin_recording) ----
    // recordable_ (fixed by finish): every computed instance runs in one memory
    // space that records (rec_mem_), reads only that space, and needs no host
    // step between kernels (no conds, loops, locked or immediate writes, or
    // kernels that are not replayable). Per binding of the dyn extents, keys_
    // holds up to max_recordings sets of the pointers a run's work reads and
    // writes (every instance's ptr and buf, and the workspace); a set met a
    // second time is recorded (rec_), then replayed whenever it comes again.
    // Variables updated by a swap alternate between two sets.
    static constexpr std::size_t max_recordings = 4;
    // true: this run's step 5 was a replay; false: run it as usual
    bool replay_or_record(run_stats& stats);
    void drop_recordings() noexcept;
    void plan_recording();  // sets recordable_ and sizes the keys (finish)
    bool replay_ = true;
    bool recordable_ = false;
    const memory_space* rec_mem_ = nullptr;
    std::size_t key_len_ = 0, slots_ = 0, next_slot_ = 0;
    typeflow::detail::pod_vector<const void*> keys_;  // max_recordings * key_len_
    typeflow::detail::pod_vector<const void*> key_;   // this run's
    typeflow::detail::pod_vector<void*> rec_;         // per slot: its recording, or null (met once)
    typeflow::detail::pod_vector<std::size_t> rec_evals_;  // per slot: the evaluations it replays
    // memory spaces whose enter/leave bracket a run (address order)
    typeflow::detail::pod_vector<const memory_space*> gates_;
    // a leaf on a device with memory of its own: its elements there (placeholders and constants in
    // the plan's copies, variables in their own)
    const void* device_leaf(std::uint32_t k, const void* host);
    // an assign that computes into its variable's next buffer (swap_): that buffer
    void* next_buffer(std::uint32_t k);
    bool on_device(std::size_t i) const { return desc_[i]->memory && !desc_[i]->memory->host; }

    // ---- conds: branch contexts ----
    // Each instance runs in a context: 0 (always) or a side of a cond, keyed
    // by (the cond's context, its predicate's instance, then or else), so
    // that conds on one predicate (a cond and its gradient's conds) share
    // one. An instance several contexts read runs in their common ancestor.
    // A cond, before its kernel, runs the instances of its taken side that
    // precede it; the others of that context run at a later cond of it.
    struct branch_ctx {
        std::uint32_t parent = 0, pred = 0, side = 0, depth = 0;
    };
    void plan_branches();
    std::uint32_t intern_ctx(std::uint32_t parent, std::uint32_t pred, std::uint32_t side);
    std::uint32_t common_ctx(std::uint32_t a, std::uint32_t b) const;
    // computes instance k of node i (a cond first runs its taken side)
    void compute(std::size_t i, std::uint32_t k, run_stats& stats);
    // runs the instances of context x that precede node `limit` and have not run
    void run_branch(std::uint32_t x, std::size_t limit, run_stats& stats);
    // the iterations of loop instance k (before its kernel)
    void run_loop(std::uint32_t k, run_stats& stats);
    // loops: the instances of a loop's contexts that depend on neither its variable nor
    // its counter run once, before it (in the loop's parent context)
    void hoist_invariants();
    bool in_loop_ctx(std::uint32_t x, std::uint32_t body, std::uint32_t cond) const;

    template <class T>
    using array = typeflow::detail::pod_vector<T>;
    const subgraph* top_;
    // the merged table
    array<const node_desc*> desc_;
    array<node_desc> own_desc_;  // a tf::expr leaf as a view of its segment's root
    array<region_fn_t> region_fn_;
    array<graph::node_flags> flags_;
    std::size_t n_ = 0;
    array<graph::edge> edges_;
    array<std::size_t> first_edge_;
    std::size_t max_children_ = 0;
    std::size_t max_operands_ = 0;
    // expansion
    array<segment> segs_;
    array<expansion_use> uses_;
    array<segment> pending_;        // provisional number -> its graph and root
    array<std::uint32_t> seg_of_;  // provisional number -> segment
    array<const void*> kids_;      // scratch of discover
    typeflow::detail::key_map seen_;  // (op object, provisional segment) met by discover
    typeflow::detail::key_map expanded_;  // (tf::expr identity, 0) -> provisional number
    std::uint32_t provisional_ = 0;

    array<instance> insts_;
    array<std::uint32_t> first_inst_, last_inst_;  // per node: its instances, linked by instance::next
    array<loop_scope> scopes_;                     // walk(): the loops it is inside, outermost first
    std::uint32_t loops_walked_ = 0;               // walk(): numbers the loops that are not pure
    array<std::uint32_t> child_refs_;
    array<std::uint32_t> operand_refs_;
    typeflow::detail::key_map by_id_;  // (identity, node) -> instance: a scalar's identity may be its parent's
    typeflow::detail::key_map by_obj_;  // (operation node identity, 0) -> its first instance, in any segment
    struct shared_read {
        std::size_t node, reader;  // node `reader` of a later segment reads the instance of `node`
    };
    array<shared_read> shared_;
    array<named_storage> names_;
    array<fetch> fetches_;
    array<std::uint8_t> ready_after_;  // per node: a computed node some fetch reads (for a ready_hook)
    // reports the fetches of node i (or, for i == n_, those not computed) to the hook
    void report_ready(const ready_hook& hook, std::size_t i) const;

    array<dims> dims_;  // per instance
    array<std::uint8_t> forwarded_;  // per instance: its kernel's result is its child 0's elements in this binding
    array<dims> fed_dims_;
    array<dims> fed_;  // per node (placeholders)
    array<const void*> feed_ptr_;
    bool bound_ = false;
    std::unique_ptr<region::layout[]> regions_;  // per instance
    parallel_ctx par_;                           // the session's threads
    array<void*> states_;                        // per instance: its kernel's state, or null
    array<dims> extra_dims_;                     // outputs 1.. of multi-output instances: extents
    array<std::size_t> extra_off_;               // ... and byte offsets in the instance's buffer
    array<void*> out_ptr_;                       // scratch: the outputs 1.. of the kernel running
    void* work_ = nullptr;                       // kernel workspace (detail::allocate_buffer)
    std::size_t work_bytes_ = 0;
    array<std::size_t> last_;
    bool has_conds_ = false;
    array<branch_ctx> ctxs_;             // 0: always
    array<std::uint32_t> ctx_;           // per instance: its context
    array<std::uint32_t> side_ctx_;      // per instance: a cond's then and else contexts
    array<std::uint32_t> ctx_first_;     // per context: its computed instances in ctx_list_, in run order
    array<std::uint32_t> ctx_list_;
    array<std::uint32_t> cursor_;        // per context, in a run: the next of its instances to run
    array<std::size_t> estep_, elast_;   // per instance in a branch: the step it runs at, its last read
    array<std::uint8_t> ran_;            // per instance, in a run: computed
    // A while loop and the scan its gradient recomputes it with (detail::while_forward), both at
    // the top level, the loop first: the loop writes the scan's rows as it runs, and the scan
    // does not run (run_loop). Per instance: its partner, or none (empty: no such pair).
    array<std::uint32_t> loop_rec_;  // (named apart from rec_, the recordings of device work)
    array<std::uint8_t> recorded_;  // per scan instance, in a run: its rows are written
    void plan_recorded_scans();
    array<std::uint32_t> reset_first_;   // per instance: a loop's contexts (and those inside them) in reset_list_
    array<std::uint32_t> reset_list_;
    struct arena_block {  // from its memory space, zeroed
        const memory_space* mem = nullptr;
        std::byte* p = nullptr;
        std::size_t bytes = 0;
        void release() noexcept {
            if (p) mem->free(p, bytes);
            p = nullptr;
        }
    };
    array<arena_block> arenas_;  // one per memory space the plan's computed nodes use
    struct leaf_copy {  // a placeholder's or constant's elements on its device
        void* p = nullptr;
        std::size_t cap = 0;
        std::size_t sent = ~std::size_t{0};  // bytes of the last upload of a small constant (kept in `last`)
        unsigned char last[64]{};
    };
    array<leaf_copy> leaf_copies_;  // per instance (leaves on devices with memory of their own)
    // per instance: an assign on a device that computes into its variable's next buffer, committed
    // by a swap (the only assign of that variable in the plan, written at the end of the run)
    array<std::uint8_t> swap_;
    // per instance: a variable on a device that a kernel writes where it is (node_desc::writes_first)
    array<std::uint8_t> written_;
    bool device_ = false;           // some node lives in device memory
    std::size_t arena_bytes_ = 0;
    // scratch for one run (sized at construction: runs do not allocate)
    array<const void*> in_ptr_;
    array<const dims*> in_dims_;
    array<const void*> base_;
    array<region::operand_info> opinfo_;
};

// ---- the functions of a node_desc, each keyed on one node type ----

namespace detail {
// Op nodes: the object is a standard-layout class whose only member is its
// node_handle, and its children live in the state's slots, so identity and
// children are the same code for every op node.
inline const void* node_identity(const void* obj) noexcept {
    return static_cast<const typeflow::detail::node_handle*>(obj)->get()->identity();
}
inline void node_children(const void* obj, const void** out) noexcept {
    const typeflow::detail::node_state* s = static_cast<const typeflow::detail::node_handle*>(obj)->get();
    for (std::size_t j = 0; j < s->count; ++j) out[j] = s->slots()[j].bytes;
}
template <class T>
const void* leaf_linked(const void* obj) {
    return static_cast<const T*>(obj)->linked_node();
}
// The class whose functions a leaf's table entries call: a variable's
// variable_base (one per dtype), any other leaf itself.
template <class T>
struct leaf_impl : meta::compile_time_only {
    using type = T;
};
template <class T>
    requires typeflow::detail::is_variable_v<T>
struct leaf_impl<T> : meta::compile_time_only {
    using type = typeflow::detail::variable_base<value_type_t<T>>;
};
template <class T>
using leaf_impl_t = typename leaf_impl<T>::type;
template <class T>
const void* leaf_identity(const void* obj) {
    return static_cast<const T*>(obj)->identity();
}
/// What the runtime does with a variable's device copy: reads it, writes it
/// (the host's value becomes stale), asks for the buffer an assign computes
/// the next value into, or commits that next value (a swap).
enum mirror_use : int { mirror_read = 0, mirror_write = 1, mirror_next = 2, mirror_commit = 3 };
// A variable's copy in the memory space m: allocated and uploaded when the
// host's value is newer.
// (Out of line: every variable's variable_mirror calls it.)
TYPEFLOW_NOINLINE inline void* mirror_in(typeflow::detail::device_mirror& mr, void* host, std::size_t bytes, const memory_space* m, int use) {
    if (use == mirror_next) {
        if (!mr.next) mr.next = m->allocate(bytes ? bytes : 1);
        return mr.next;
    }
    if (use == mirror_commit) {
        void* t = mr.dev;
        mr.dev = mr.next;
        mr.next = t;
        mr.host_stale = true;
        mr.device_stale = false;
        return mr.dev;
    }
    if (!mr.dev) {
        mr.dev = m->allocate(bytes ? bytes : 1);
        mr.bytes = bytes ? bytes : 1;
        mr.free_fn = m->free;
        mr.download_fn = m->download;
        mr.device_stale = true;
    }
    if (mr.device_stale) {
        if (bytes) m->upload(mr.dev, host, bytes);
        mr.device_stale = false;
        mr.host_stale = false;
    }
    if (use == mirror_write) mr.host_stale = true;
    return mr.dev;
}
template <class T>
void* variable_mirror(const void* obj, const memory_space* m, int use) {
    auto& st = static_cast<const T*>(obj)->state();
    return mirror_in(st.mirror, st.value.data(), static_cast<std::size_t>(st.value.size()) * sizeof(value_type_t<T>), m, use);
}
template <class Device>
inline constexpr const memory_space* memory_of = [] {
    if constexpr (requires { device_memory<Device>::value; }) return &device_memory<Device>::value;
    else return static_cast<const memory_space*>(nullptr);
}();
template <class T>
dims leaf_runtime_dims(const void* obj) {
    return static_cast<const T*>(obj)->runtime_dims();
}
template <class T>
const void* leaf_data(const void* obj) {
    const T& c = *static_cast<const T*>(obj);
    if constexpr (typeflow::detail::is_variable_v<T>) return c.value().data();
    else if constexpr (typeflow::detail::is_scalar_v<T>) return &c.value;
    else if constexpr (typeflow::detail::is_literal_v<T>) return &T::value;
    else return c.data->data();  // constant tensor
}
// extents of an op that computes them from its children's run-time extents alone
template <class Op, std::size_t... J>
dims infer_dims(const dims* const* in) {
    return Op::infer(*in[J]...);
}
// extents of an op that also needs its children's static shapes
template <class Op, class... In>
dims infer_typed(const dims* const* in) {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
        return Op::template infer_static<In...>(*in[J]...);
    }(std::index_sequence_for<In...>{});
}
template <class Device, class Sig>
void eval_kernel(const kernel_ctx& ctx, void* out) {
    kernel<Device, typename Sig::op>::run(Sig{}, ctx, static_cast<typename Sig::value_type*>(out));
}
template <class Device, class Sig>
void eval_kernel_epilogue(const kernel_ctx& ctx, void* out, const epilogue& e) {
    kernel<Device, typename Sig::op>::run_epilogue(Sig{}, ctx, static_cast<typename Sig::value_type*>(out), e);
}
template <class K>
std::size_t kernel_workspace(const kernel_ctx& ctx) {
    return K::workspace_bytes(ctx);
}
template <class S>
void* make_kernel_state() {
    return new S();
}
template <class S>
void free_kernel_state(void* p) {
    delete static_cast<S*>(p);
}
// The kernel of Op on Device, or a first error line naming both.
template <class Device, class Op>
constexpr bool kernel_exists() {
    constexpr bool ok = has_kernel<Device, Op>;
    if constexpr (!ok) {
        diagnostic::no_kernel_for_device<Op, Device> error;
    }
    static_assert(ok, "typeflow: this op has no kernel on the node's device: move its operands with tf::to<D>, "
                      "or specialise typeflow::kernel<Device, Op>");
    return ok;
}
template <class T>
inline constexpr char feed_key = 0;

template <class T>
struct result_ops {
    static void* prepare(void* r, const dims& d) {
        auto& t = *static_cast<tensor<T>*>(r);
        // unique() also orders the writes below after the last holder's reads
        // (a plan that moved between the threads of concurrent runs)
        if (t.empty() || !t.unique() || !(t.dims() == d)) t = tensor<T>(d);
        return t.data();
    }
    static void reset(void* r) { *static_cast<tensor<T>*>(r) = {}; }
    static void share(void* dst, const void* src) {
        *static_cast<tensor<T>*>(dst) = *static_cast<const tensor<T>*>(src);
    }
    static constexpr result_fns fns{&prepare, &reset, &share};
};

// The loop of the region rooted at T on its device, or none: keyed on the
// region's canonical form (a short type shared by regions of one structure),
// never on the graph type, whose mangled name would spell the whole graph.
struct no_region {};
template <class Device, class Canon, class V>
struct region_ptr {
    static constexpr region_fn_t value = [] {
        if constexpr (has_backend<Device>) return &fused<Device>::template eval<Canon, V>;
        else return region_fn_t{};
    }();
};
template <class Device, class V>
struct region_ptr<Device, no_region, V> {
    static constexpr region_fn_t value = nullptr;
};
template <class G, std::size_t I, class T, bool Root>
struct region_of : meta::compile_time_only {
    using type = no_region;
};
template <class G, std::size_t I, class T>
struct region_of<G, I, T, true> : meta::compile_time_only {
    using type = region::canonical_t<G, I, T>;
};


template <class Op, std::size_t... J>
dims infer_output_of(std::size_t k, const dims* const* in) {
    return Op::infer_output(k, *in[J]...);
}
template <class Op, class Seq>
struct output_facts;
template <class Op, std::size_t... J>
struct output_facts<Op, std::index_sequence<J...>> {
    static constexpr dims (*infer)(std::size_t, const dims* const*) = &infer_output_of<Op, J...>;
};
template <class L>
struct output_sizes;
template <class... R>
struct output_sizes<meta::list<R...>> {
    static constexpr std::size_t value[sizeof...(R)] = {sizeof(typename R::value_type)...};
};
template <class Op, std::size_t... J>
bool forwards_dims(const dims* const* in) {
    return Op::forwards(*in[J]...);
}
template <class Op, std::size_t N, class I = std::make_index_sequence<N>>
struct has_forwards {
    static constexpr bool (*fn)(const dims* const*) = nullptr;
};
template <class Op, std::size_t N, std::size_t... J>
    requires requires { Op::forwards(((void)J, std::declval<const dims&>())...); }
struct has_forwards<Op, N, std::index_sequence<J...>> {
    static constexpr bool (*fn)(const dims* const*) = &forwards_dims<Op, J...>;
};
template <class Op, std::size_t N, class I = std::make_index_sequence<N>>
struct has_infer : std::false_type {};
template <class Op, std::size_t N, std::size_t... J>
    requires requires { Op::infer(((void)J, std::declval<const dims&>())...); }
struct has_infer<Op, N, std::index_sequence<J...>> : std::true_type {
    static constexpr dims (*fn)(const dims* const*) = &infer_dims<Op, J...>;
};

// The descriptor of an operation node, keyed on its signature: the op, its
// element type, static shape, purity and control inputs, and its children's
// element types and static shapes. Never on the node type itself: every
// entity instantiated per node type has a mangled name that spells the node's
// whole subgraph (GCC mangles each in time quadratic in that name's length),
// and nodes of one signature (the steps of a deep chain) share one descriptor.
// The facts of a descriptor that depend on the device and the op alone
// (instantiated once per op, not once per node signature).
template <class Device, class Op, bool Kernel = Op::kind == op_kind::kernel>
struct op_facts {
    static constexpr std::size_t (*workspace)(const kernel_ctx&) = nullptr;
    static constexpr void* (*make_state)() = nullptr;
    static constexpr void (*free_state)(void*) = nullptr;
    static constexpr bool replayable = true;
    static constexpr bool bias_grad_epilogue = false;
    static constexpr bool sums_matrix_rows = [] {
        if constexpr (requires { Op::sums_matrix_rows; }) return bool{Op::sums_matrix_rows};
        else return false;
    }();
    static constexpr std::size_t output_index = [] {
        if constexpr (requires { Op::output_index; }) return std::size_t{Op::output_index};
        else return std::size_t{0};
    }();
    static constexpr std::uint32_t writes_first = [] {
        if constexpr (requires { Op::writes_first; }) return static_cast<std::uint32_t>(Op::writes_first);
        else return std::uint32_t{0};
    }();
    static constexpr std::uint32_t writes_end = [] {
        if constexpr (requires { Op::writes_end; }) return static_cast<std::uint32_t>(Op::writes_end);
        else return std::uint32_t{0};
    }();
    static constexpr const memory_space* memory = memory_of<Device>;
};
template <class Device, class Op>
struct op_facts<Device, Op, true> : op_facts<Device, Op, false> {
    using K = kernel<Device, Op>;
    static constexpr std::size_t (*workspace)(const kernel_ctx&) = [] {
        if constexpr (requires { K::workspace_bytes(std::declval<const kernel_ctx&>()); }) return &kernel_workspace<K>;
        else return static_cast<std::size_t (*)(const kernel_ctx&)>(nullptr);
    }();
    static constexpr void* (*make_state)() = [] {
        if constexpr (requires { typename K::state; }) return &make_kernel_state<typename K::state>;
        else return static_cast<void* (*)()>(nullptr);
    }();
    static constexpr void (*free_state)(void*) = [] {
        if constexpr (requires { typename K::state; }) return &free_kernel_state<typename K::state>;
        else return static_cast<void (*)(void*)>(nullptr);
    }();
    static constexpr bool replayable = [] {
        if constexpr (requires { K::replayable; }) return bool{K::replayable};
        else return true;
    }();
    static constexpr bool bias_grad_epilogue = [] {
        if constexpr (requires { K::bias_grad_epilogue; }) return bool{K::bias_grad_epilogue};
        else return false;
    }();
};
// The facts of a multi-output op's descriptor (none for one output).
template <class Op, class OutputsList, std::size_t Arity, bool Many = (outputs_of_v<Op> > 1)>
struct output_facts_of {
    static constexpr const std::size_t* sizes = nullptr;
    static constexpr dims (*infer)(std::size_t, const dims* const*) = nullptr;
};
template <class Op, class OutputsList, std::size_t Arity>
struct output_facts_of<Op, OutputsList, Arity, true> {
    static constexpr const std::size_t* sizes = output_sizes<OutputsList>::value;
    static constexpr dims (*infer)(std::size_t, const dims* const*) = output_facts<Op, std::make_index_sequence<Arity>>::infer;
};

template <class Device, class Op, class T, class S, bool Pure, std::size_t Control, class OutputsList, class... In>
struct op_desc {
    static constexpr std::size_t arity = sizeof...(In);
    static constexpr bool is_kernel = Op::kind == op_kind::kernel;
    static constexpr std::size_t outputs = outputs_of_v<Op>;
    using kernel_sig = sig_node<Op, T, sig_input<In::index, typename In::value_type>...>;
    static constexpr extent_rule rule = requires { Op::output_index; } ? extent_rule::output
                                        : Op::kind != op_kind::elementwise ? extent_rule::function
                                        : has_infer<Op, arity>::value     ? extent_rule::function
                                        : graph::is_assign<sig_node<Op, T>>::value ? extent_rule::assign
                                        : Control > 0                      ? extent_rule::last
                                                                           : extent_rule::broadcast;
    static constexpr dims (*infer)(const dims* const*) = [] {
        if constexpr (rule != extent_rule::function) return nullptr;
        else if constexpr (has_infer<Op, arity>::value) return has_infer<Op, arity>::fn;
        else return &infer_typed<Op, In...>;
    }();
    static constexpr node_desc value{
        .kind = Op::kind,
        .pure = Pure,
        .scalar = S::numel == 1,
        .conditional = requires { Op::conditional; },
        .loop = [] {
            if constexpr (requires { Op::loop_kind; }) return std::uint8_t{Op::loop_kind};
            else return std::uint8_t{0};
        }(),
        .rule = rule,
        .children = arity,
        .control_inputs = Control,
        .elem_size = sizeof(T),
        .type = dtype_of<T>,
        .static_dims = S::value,
        .name = op_name_v<Op>,
        .identity = &node_identity,
        .children_of = &node_children,
        .infer = infer,
        .forwards = has_forwards<Op, arity>::fn,
        .eval = [] {
            using fn = void (*)(const kernel_ctx&, void*);
            if constexpr (is_kernel && has_backend<Device>) {
                if constexpr (kernel_exists<Device, Op>()) return fn{&eval_kernel<Device, kernel_sig>};
                else return fn{};
            } else {
                return fn{};
            }
        }(),
        .eval_epilogue = [] {
            using fn = void (*)(const kernel_ctx&, void*, const epilogue&);
            if constexpr (is_kernel && has_backend<Device>) {
                if constexpr (requires { &kernel<Device, Op>::template run_epilogue<kernel_sig, kernel_ctx>; })
                    return fn{&eval_kernel_epilogue<Device, kernel_sig>};
                else return fn{};
            } else {
                return fn{};
            }
        }(),
        .workspace = op_facts<Device, Op>::workspace,
        .outputs = outputs,
        .output_sizes = output_facts_of<Op, OutputsList, arity>::sizes,
        .infer_output = output_facts_of<Op, OutputsList, arity>::infer,
        .output_index = op_facts<Device, Op>::output_index,
        .memory = op_facts<Device, Op>::memory,
        .make_state = op_facts<Device, Op>::make_state,
        .free_state = op_facts<Device, Op>::free_state,
        .replayable = op_facts<Device, Op>::replayable,
        .bias_grad_epilogue = op_facts<Device, Op>::bias_grad_epilogue,
        .sums_matrix_rows = op_facts<Device, Op>::sums_matrix_rows,
        .epilogue = epilogue_role_of<Op>,
        .writes_first = op_facts<Device, Op>::writes_first,
        .writes_end = op_facts<Device, Op>::writes_end,
    };
};
// The descriptor of a leaf (leaf types are short: a name, a dtype, a shape).
template <class T>
struct leaf_desc {
    static constexpr bool placeholder = typeflow::detail::is_placeholder_v<T>;
    static constexpr bool erased = requires { T::expand_graph; };  // a tf::expr
    static constexpr node_desc value{
        .kind = op_kind::leaf,
        .pure = T::pure,
        .placeholder = placeholder,
        .variable = typeflow::detail::is_variable_v<T>,
        .scalar = shape_t<T>::numel == 1,
        .rule = extent_rule::leaf,
        .elem_size = sizeof(value_type_t<T>),
        .type = dtype_of<value_type_t<T>>,
        .static_dims = shape_t<T>::value,
        .name = [] {
            if constexpr (requires { T::name(); }) return T::name();
            else return std::string_view{};
        }(),
        .feed_key = placeholder ? &feed_key<T> : nullptr,
        .identity = &leaf_identity<leaf_impl_t<T>>,
        .data = [] {
            if constexpr (placeholder || erased) return nullptr;
            else return &leaf_data<leaf_impl_t<T>>;
        }(),
        .leaf_dims = [] {
            if constexpr (requires(const T& t) { t.runtime_dims(); }) return &leaf_runtime_dims<T>;
            else return static_cast<dims (*)(const void*)>(nullptr);
        }(),
        .memory = erased ? nullptr : memory_of<device_t<T>>,
        .mirror = [] {
            if constexpr (typeflow::detail::is_variable_v<T>) return &variable_mirror<leaf_impl_t<T>>;
            else return static_cast<void* (*)(const void*, const memory_space*, int)>(nullptr);
        }(),
        .expand = [] {
            if constexpr (erased) return &T::expand_graph;
            else return nullptr;
        }(),
        .linked = [] {
            if constexpr (requires(const T& t) { t.linked_node(); }) return &leaf_linked<T>;
            else return static_cast<const void* (*)(const void*)>(nullptr);
        }(),
    };
};
template <class T>
struct output_list : meta::compile_time_only {
    using type = void;
};
template <class T>
    requires requires { typename T::traits::outputs_list; }
struct output_list<T> : meta::compile_time_only {
    using type = typename T::traits::outputs_list;
};
template <class T, class L = meta::children_t<T>, class I = std::make_index_sequence<L::size>>
struct desc_for : meta::compile_time_only {
    using type = leaf_desc<T>;
};
template <class T, class... C, std::size_t... J>
    requires(!T::is_leaf)
struct desc_for<T, meta::list<C...>, std::index_sequence<J...>> : meta::compile_time_only {
    using type = op_desc<device_t<T>, typename T::op, value_type_t<T>, shape_t<T>, typeflow::detail::is_pure<T>::value, T::control_inputs,
                         typename output_list<T>::type,
                         sig_input<J, value_type_t<C>, shape_t<C>>...>;
};

template <class N>
constexpr bool on_backend() {
    constexpr bool ok = has_backend<device_t<N>>;
    if constexpr (!ok) {
        diagnostic::no_backend_for_device<device_t<N>, N> error;
    }
    static_assert(ok, "typeflow: session: a node is placed on a device that no backend of this build runs "
                      "(a GPU needs the CUDA backend)");
    return ok;
}
// instantiates on_backend (and its diagnostic) per node only when some node's device has no backend
template <class L, bool Ok>
struct check_devices : meta::compile_time_only {};
template <class... Ts>
struct check_devices<meta::list<Ts...>, false> : meta::compile_time_only {
    static_assert((on_backend<Ts>() && ...));  // a class-body assertion: instantiated with the class
};
// The tables of graph G (see subgraph).
template <class G, class L = typename G::nodes, class I = std::make_index_sequence<G::size>>
struct graph_tables;
template <class G, class... Ts, std::size_t... I>
struct graph_tables<G, meta::list<Ts...>, std::index_sequence<I...>> {
    static constexpr const node_desc* descs[sizeof...(Ts)] = {&desc_for<Ts>::type::value...};
    static constexpr region_fn_t regions[sizeof...(Ts)] = {
        region_ptr<device_t<Ts>, typename region_of<G, I, Ts, Ts::kind == op_kind::elementwise && G::flags[I].materialized>::type,
                   value_type_t<Ts>>::value...};
    static constexpr subgraph value{descs, regions, G::flags.data(), G::size, G::edges.data(), G::edge_count,
                                    G::first_edge.data()};
};
template <class L>
struct all_have_backends;
template <class... Ts>
struct all_have_backends<meta::list<Ts...>> : std::bool_constant<(has_backend<device_t<Ts>> && ...)>, meta::compile_time_only {};
}  // namespace detail

/// The plan of one set of fetches Fs...: the graph's descriptors (compile-time
/// data), the node objects of this fetch list, and the results.
template <class... Fs>
class plan final : public plan_core {
    using G = graph::graph_of<Fs...>;
    using nodes = typename G::nodes;
    static constexpr std::size_t N = G::size;
    static constexpr std::size_t F = sizeof...(Fs);

    static_assert(sizeof(detail::check_devices<nodes, detail::all_have_backends<nodes>::value>) > 0);

public:
    explicit plan(const fetch_list<Fs...>& f, const parallel_ctx& par = {})
        : plan_core(detail::graph_tables<G>::value, par), roots_(f.nodes) {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (add_fetch(G::template index<Fs>::value, &typeflow::detail::get_child<K>(roots_), &std::get<K>(results_),
                       &detail::result_ops<value_type_t<Fs>>::fns),
             ...);
        }(std::make_index_sequence<F>{});
        finish();
    }
    plan(const plan&) = delete;
    plan& operator=(const plan&) = delete;

    /// True when `f` is the set of node objects this plan was made for.
    bool same_roots(const fetch_list<Fs...>& f) const {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            return (same_root(typeflow::detail::get_child<K>(roots_), f.template get<K>()) && ...);
        }(std::make_index_sequence<F>{});
    }

    template <class... Feeds>
    std::tuple<tensor<value_type_t<Fs>>...> run(run_stats& stats, const Feeds&... feeds) {
        return run_hooked(stats, nullptr, feeds...);
    }
    /// run, telling `hook` as each fetch's value becomes final (see run_core).
    template <class... Feeds>
    std::tuple<tensor<value_type_t<Fs>>...> run_hooked(run_stats& stats, const ready_hook* hook, const Feeds&... feeds) {
        const feed_ref refs[] = {feed_ref_of(feeds)..., feed_ref{}};
        run_core(stats, refs, sizeof...(Feeds), hook);
        return results_;
    }

private:
    template <class P>
    static feed_ref feed_ref_of(const feed_entry<P>& e) {
        return {&detail::feed_key<P>, P::name(), e.data.dims, e.data.data};
    }
    // a fetch is its node's identity; a scalar constant's identity is the
    // address of its value, which moves with the object: scalars compare by value
    template <class T>
    static bool same_root(const T& a, const T& b) {
        if constexpr (typeflow::detail::is_scalar_v<T>) return a.value == b.value;
        else return a.identity() == b.identity();
    }

    typeflow::detail::children_of<Fs...> roots_;  // the plan's own copies of the fetched nodes (handles)
    std::tuple<tensor<value_type_t<Fs>>...> results_;
};

}  // namespace typeflow::runtime

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/runtime/impl/plan_core.ipp>
#endif

// typeflow/runtime/impl/plan_core.ipp — the plan runtime's plain C++ (see
// runtime/plan.hpp): inline in header-only builds; with
// TYPEFLOW_SEPARATE_COMPILATION it is compiled once, in the translation unit
// that includes <typeflow/src.hpp>.
#pragma once
#include <typeflow/runtime/plan.hpp>

namespace typeflow::runtime {

TYPEFLOW_DECL plan_core::plan_core(const node_desc* const* desc, const region_fn_t* region, const graph::node_flags* flags,
                                   std::size_t n, const graph::edge* edges, std::size_t n_edges)
    : desc_(desc, n), region_fn_(region), flags_(flags), n_(n), edges_(edges), n_edges_(n_edges), first_edge_(n + 1),
      dims_(n), fed_dims_(n), fed_(n), feed_ptr_(n), regions_(new backend::eigen::region_layout[n]), last_(n) {
    first_inst_.assign(n, none);
    last_inst_.assign(n, none);
    std::size_t e = 0;
    for (std::size_t i = 0; i < n; ++i) {
        first_edge_[i] = e;
        e += desc[i]->children;
        max_children_ = std::max(max_children_, desc[i]->children);
    }
    first_edge_[n] = e;
    in_ptr_.resize(max_children_);
    in_dims_.resize(max_children_);
    compute_last_reads();
}

TYPEFLOW_DECL plan_core::~plan_core() = default;

TYPEFLOW_DECL void plan_core::add_fetch(std::size_t node, const void* obj, void* result, const result_fns* fns) {
    walk(node, obj);
    const std::size_t k = fetches_.size();
    fetch f;
    f.node = node;
    f.id = desc_[node].pure ? nullptr : desc_[node].identity(obj);
    f.result = result;
    f.fns = fns;
    f.primary = k;
    for (std::size_t j = 0; j < k; ++j)
        if (fetches_[j].node == node && fetches_[j].id == f.id) {
            f.primary = j;
            break;
        }
    fetches_.push_back(f);
}

TYPEFLOW_DECL void plan_core::finish() {
    for (std::uint32_t k = 0; k < insts_.size(); ++k) {
        instance& in = insts_[k];
        if (is_region_root(in.node)) {
            in.first_operand = static_cast<std::uint32_t>(operand_refs_.size());
            collect_operands(k);
            in.operands = static_cast<std::uint32_t>(operand_refs_.size()) - in.first_operand;
            max_operands_ = std::max<std::size_t>(max_operands_, in.operands);
        }
    }
    base_.resize(max_operands_ + 1);
    opinfo_.resize(max_operands_ + 1);
}

TYPEFLOW_DECL void plan_core::run_core(run_stats& stats, const feed_ref* feeds, std::size_t n_feeds) {
    // 1. feeds
    bool changed = !bound_;
    for (std::size_t i = 0; i < n_; ++i) {
        const node_desc& d = desc_[i];
        if (!d.placeholder) continue;
        const feed_ref* f = nullptr;
        for (std::size_t j = 0; j < n_feeds && !f; ++j)
            if (feeds[j].key == d.feed_key) f = &feeds[j];
        static constexpr dims no_dims{};
        check_feed(d.name, d.type, d.static_dims, f != nullptr, f ? f->extents : no_dims, f ? f->data : nullptr);
        fed_[i] = f->extents;
        feed_ptr_[i] = f->data;
        changed = changed || !(fed_[i] == fed_dims_[i]);
    }
    // 2. extents and memory, re-planned only when a dyn extent changed
    if (changed) {
        rebind();
        ++stats.rebinds;
    }
    // 3. results: a fetched node is computed straight into its result tensor
    prepare_results();
    // 4. where each instance's elements are in this run
    for (std::size_t i = 0; i < n_; ++i) {
        const node_desc& d = desc_[i];
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) {
            instance& in = insts_[k];
            if (d.placeholder) in.ptr = feed_ptr_[i];
            else if (d.kind == op_kind::leaf) in.ptr = d.data(in.obj);
            else if (d.kind == op_kind::view) in.ptr = insts_[child_ref(in, 0)].ptr;
            else in.ptr = in.buf;
        }
    }
    // 5. compute, in topological order
    stats.evaluations = 0;
    for (std::size_t i = 0; i < n_; ++i) {
        if (!computed(i)) continue;
        const node_desc& d = desc_[i];
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) {
            instance& in = insts_[k];
            if (d.kind == op_kind::elementwise) {
                for (std::uint32_t o = 0; o < in.operands; ++o) base_[o] = insts_[operand_refs_[in.first_operand + o]].ptr;
                region_fn_[i](regions_[i], base_.data(), in.buf);
            } else {
                for (std::size_t j = 0; j < d.children; ++j) {
                    in_ptr_[j] = insts_[child_ref(in, j)].ptr;
                    in_dims_[j] = &dims_[child_node(i, j)];
                }
                d.eval(in.obj, in_ptr_.data(), in_dims_.data(), in.buf);
            }
            ++stats.evaluations;
            if (flags_[i].immediate_write) write(i, in);
        }
    }
    // 6. fetched leaves and views are copied out
    for (const fetch& f : fetches_) {
        const node_desc& d = desc_[f.node];
        if (f.primary != static_cast<std::size_t>(&f - fetches_.data())) continue;
        if (d.kind != op_kind::leaf && d.kind != op_kind::view) continue;
        const instance& in = insts_[instance_of(f)];
        std::memcpy(f.data, in.ptr, bytes_of(f.node));
    }
    // 7. writes of assigns, in topological order (the later of two writes wins)
    for (std::size_t i = 0; i < n_; ++i)
        if (flags_[i].assign && !flags_[i].immediate_write)
            for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) write(i, insts_[k]);
    stats.arena_bytes = arena_bytes_;
    // 8. a node fetched twice: every such result shares the first one's tensor
    for (fetch& f : fetches_)
        if (f.primary != static_cast<std::size_t>(&f - fetches_.data()))
            f.fns->share(f.result, fetches_[f.primary].result);
}

TYPEFLOW_DECL std::uint32_t plan_core::walk(std::size_t i, const void* obj) {
    const node_desc& d = desc_[i];
    const void* id = d.identity(obj);
    if (d.variable) register_variable(names_, d.name, id);
    const bool op = d.kind != op_kind::leaf;
    // each distinct object is walked once (so names below it are checked);
    // a pure node has one instance, an impure one an instance per object
    if (op || !d.pure) {
        const std::uint32_t found = by_id_.find(id, i);
        if (found != none) return found;
    }
    if (!op && d.pure && first_inst_[i] != none) return first_inst_[i];
    array<const void*> kids(d.children);
    if (d.children) d.children_of(obj, kids.data());
    array<std::uint32_t> refs(d.children);
    for (std::size_t j = 0; j < d.children; ++j) refs[j] = walk(child_node(i, j), kids[j]);
    std::uint32_t k;
    if (d.pure && first_inst_[i] != none) {
        k = first_inst_[i];
    } else {
        k = static_cast<std::uint32_t>(insts_.size());
        instance in;
        in.node = static_cast<std::uint32_t>(i);
        in.obj = obj;
        in.id = id;
        in.first_child = static_cast<std::uint32_t>(child_refs_.size());
        child_refs_.append(refs.data(), refs.size());
        insts_.push_back(in);
        if (last_inst_[i] == none) first_inst_[i] = k;
        else insts_[last_inst_[i]].next = k;
        last_inst_[i] = k;
    }
    if (op || !d.pure) by_id_.insert(id, i, k);
    return k;
}

TYPEFLOW_DECL void plan_core::collect_operands(std::uint32_t k) {
    const std::size_t i = insts_[k].node;
    for (std::size_t j = desc_[i].control_inputs; j < desc_[i].children; ++j) {
        const std::uint32_t c = child_ref(insts_[k], j);
        const std::size_t ci = insts_[c].node;
        if (desc_[ci].kind == op_kind::leaf || flags_[ci].materialized) operand_refs_.push_back(c);
        else collect_operands(c);
    }
}

TYPEFLOW_DECL std::uint32_t plan_core::instance_of(const fetch& f) const {
    for (std::uint32_t k = first_inst_[f.node]; k != none; k = insts_[k].next)
        if (f.id == nullptr || insts_[k].id == f.id) return k;
    return first_inst_[f.node];
}

TYPEFLOW_DECL bool plan_core::is_fetched_instance(std::size_t i, const void* id) const {
    for (const fetch& f : fetches_)
        if (f.node == i && (f.id == nullptr || f.id == id)) return true;
    return false;
}

TYPEFLOW_DECL void plan_core::rebind() {
    array<dims> d(n_);
    array<const dims*> in(max_children_ + 1);
    for (std::size_t i = 0; i < n_; ++i) {
        const node_desc& nd = desc_[i];
        for (std::size_t j = 0; j < nd.children; ++j) in[j] = &d[child_node(i, j)];
        switch (nd.rule) {
        case extent_rule::leaf: d[i] = nd.placeholder ? fed_[i] : nd.static_dims; break;
        case extent_rule::function: d[i] = nd.infer(in.data()); break;
        case extent_rule::broadcast: d[i] = broadcast_operands(nd.name, in.data(), nd.children); break;
        case extent_rule::last: d[i] = *in[nd.children - 1]; break;
        case extent_rule::assign:
            check_assign_fits(nd.name, desc_[child_node(i, 0)].name, *in[0], *in[1]);
            d[i] = *in[0];
            break;
        }
    }
    // fused regions: loop structure (every instance of a node has the same operand nodes)
    std::unique_ptr<backend::eigen::region_layout[]> regions(new backend::eigen::region_layout[n_]);
    for (std::size_t i = 0; i < n_; ++i) {
        if (!is_region_root(i)) continue;
        const instance& in0 = insts_[first_inst_[i]];
        for (std::uint32_t o = 0; o < in0.operands; ++o) {
            const std::size_t on = insts_[operand_refs_[in0.first_operand + o]].node;
            opinfo_[o] = {&d[on], desc_[on].elem_size, desc_[on].scalar};
        }
        regions[i] = backend::eigen::plan_region(d[i], opinfo_.data(), in0.operands);
    }
    // buffers: every computed instance that is not fetched
    array<buffer_request> reqs;
    array<std::uint32_t> owner;
    for (std::size_t i = 0; i < n_; ++i) {
        if (!computed(i)) continue;
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) {
            if (is_fetched_instance(i, insts_[k].id)) continue;
            const std::size_t bytes = static_cast<std::size_t>(d[i].numel()) * desc_[i].elem_size;
            reqs.push_back({bytes, i, flags_[i].assign ? n_ : last_[i], 0});
            owner.push_back(k);
        }
    }
    const std::size_t total = plan_memory(reqs.data(), reqs.size());
    const std::size_t arena_size = total ? total : 1;
    auto* arena = static_cast<std::byte*>(::operator new(arena_size, std::align_val_t{typeflow::detail::tensor_alignment}));
    std::memset(arena, 0, arena_size);
    // commit
    dims_ = static_cast<array<dims>&&>(d);
    regions_ = static_cast<std::unique_ptr<backend::eigen::region_layout[]>&&>(regions);
    arena_.reset(arena);
    arena_bytes_ = total;
    for (std::size_t r = 0; r < reqs.size(); ++r) insts_[owner[r]].buf = arena_.p + reqs[r].offset;
    fed_dims_ = fed_;
    bound_ = true;
}

TYPEFLOW_DECL void plan_core::compute_last_reads() {
    array<std::size_t> step(n_);
    for (std::size_t i = n_; i-- > 0;) {
        step[i] = i;
        if (!flags_[i].leaf && !flags_[i].materialized)  // fused: used exactly once
            for (std::size_t e = 0; e < n_edges_; ++e)
                if (edges_[e].child == i) step[i] = step[edges_[e].parent];
    }
    for (std::size_t i = 0; i < n_; ++i) last_[i] = flags_[i].fetched ? n_ : i;
    for (std::size_t e = 0; e < n_edges_; ++e)
        last_[edges_[e].child] = std::max(last_[edges_[e].child], step[edges_[e].parent]);
    for (std::size_t i = n_; i-- > 0;)
        if (flags_[i].kind == op_kind::view)
            for (std::size_t e = 0; e < n_edges_; ++e)
                if (edges_[e].parent == i) last_[edges_[e].child] = std::max(last_[edges_[e].child], last_[i]);
}

TYPEFLOW_DECL void plan_core::prepare_results() {
    for (std::size_t k = 0; k < fetches_.size(); ++k) {
        fetch& f = fetches_[k];
        if (f.primary != k) {
            f.fns->reset(f.result);
            continue;
        }
        f.data = f.fns->prepare(f.result, dims_[f.node]);
        if (computed(f.node))
            for (std::uint32_t i = first_inst_[f.node]; i != none; i = insts_[i].next)
                if (f.id == nullptr || insts_[i].id == f.id) insts_[i].buf = f.data;
    }
}

TYPEFLOW_DECL void plan_core::write(std::size_t i, const instance& in) {
    const std::size_t v = child_node(i, 0);
    void* dst = const_cast<void*>(desc_[v].data(insts_[child_ref(in, 0)].obj));
    std::memcpy(dst, in.buf, bytes_of(v));
}

}  // namespace typeflow::runtime

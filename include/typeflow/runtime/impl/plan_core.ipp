// typeflow/runtime/impl/plan_core.ipp — the plan runtime's plain C++ (see
// runtime/plan.hpp): inline in header-only builds; with
// TYPEFLOW_SEPARATE_COMPILATION it is compiled once, in the translation unit
// that includes <typeflow/src.hpp>.
#pragma once
#include <functional>
#include <utility>
#include <mutex>

#include <typeflow/runtime/plan.hpp>

namespace typeflow::runtime {

// The lock of locked updates (op::locked_update): one for the process, so a
// locked update of several variables (a variable and its slots) needs no
// lock order.
TYPEFLOW_DECL std::mutex& locked_update_mutex() {
    static std::mutex m;
    return m;
}

TYPEFLOW_DECL plan_core::plan_core(const subgraph& top, const parallel_ctx& par) : top_(&top), par_(par) {}

TYPEFLOW_DECL plan_core::~plan_core() {
    drop_recordings();
    for (std::size_t k = 0; k < states_.size(); ++k)
        if (states_[k]) desc_[insts_[k].node]->free_state(states_[k]);
    if (work_) typeflow::detail::free_buffer(work_, work_bytes_);
    for (arena_block& a : arenas_) a.release();
    for (std::size_t k = 0; k < leaf_copies_.size(); ++k)
        if (leaf_copies_[k].p) desc_[insts_[k].node]->memory->free(leaf_copies_[k].p, leaf_copies_[k].cap);
}

TYPEFLOW_DECL void plan_core::add_fetch(std::size_t node, const void* obj, void* result, const result_fns* fns) {
    fetch f;
    f.node = node;
    f.obj = obj;
    f.result = result;
    f.fns = fns;
    fetches_.push_back(f);
}

TYPEFLOW_DECL void plan_core::discover(std::uint32_t top) {
    // Depth-first with an explicit stack (a chain of tf::expr objects built in
    // a loop may be deeper than the call stack). A segment is numbered when
    // its task `finish` comes off the stack: after every segment it reads.
    struct task {
        const subgraph* g;
        const void* obj;
        std::uint32_t p, i;
        bool finish;
    };
    array<task> stack;
    for (const fetch& f : fetches_) stack.push_back({top_, f.obj, top, static_cast<std::uint32_t>(f.node), false});
    while (!stack.empty()) {
        const task t = stack[stack.size() - 1];
        stack.pop_back();
        if (t.finish) {
            seg_of_[t.p] = static_cast<std::uint32_t>(segs_.size());
            segs_.push_back(pending_[t.p]);
            continue;
        }
        const node_desc& d = *t.g->descs[t.i];
        if (d.kind == op_kind::leaf) {
            if (!d.expand) continue;
            // a tf::expr: a segment of its own, made once per object
            const void* id = d.identity(t.obj);
            std::uint32_t q = expanded_.find(id, 0);
            if (q == none) {
                q = provisional_++;
                segment sg;
                sg.g = d.expand(t.obj, &sg.root);
                pending_.push_back(sg);
                seg_of_.push_back(none);
                expanded_.insert(id, 0, q);
                stack.push_back({sg.g, sg.root, q, 0, true});
                stack.push_back({sg.g, sg.root, q, static_cast<std::uint32_t>(sg.g->n - 1), false});
            }
            uses_.push_back({t.p, t.i, q});
            continue;
        }
        const void* id = d.identity(t.obj);
        if (seen_.find(id, t.p) != none) continue;
        seen_.insert(id, t.p, 0);
        kids_.resize(d.children);
        if (d.children) d.children_of(t.obj, kids_.data());
        for (std::size_t j = d.children; j-- > 0;)
            stack.push_back({t.g, kids_[j], t.p, static_cast<std::uint32_t>(t.g->edges[t.g->first_edge[t.i] + j].child), false});
    }
}

TYPEFLOW_DECL void plan_core::merge() {
    for (segment& s : segs_) {
        s.offset = n_;
        n_ += s.g->n;
    }
    // the erased leaves of each segment, with the segments they expand to
    // (grouped by merged node: exp_first[m] .. exp_first[m + 1] - 1 in exp_seg)
    array<std::uint32_t> exp_first(n_ + 2);
    for (const expansion_use& u : uses_) ++exp_first[segs_[seg_of_[u.reader]].offset + u.node + 2];
    for (std::size_t m = 0; m < n_; ++m) exp_first[m + 2] += exp_first[m + 1];
    array<std::uint32_t> exp_seg(uses_.size());
    for (const expansion_use& u : uses_) exp_seg[exp_first[segs_[seg_of_[u.reader]].offset + u.node + 1]++] = seg_of_[u.seg];
    std::size_t n_erased = 0;
    for (std::size_t i = 0; i < n_; ++i) n_erased += exp_first[i + 1] > exp_first[i];
    own_desc_.reserve(n_erased);
    desc_.resize(n_);
    region_fn_.resize(n_);
    flags_.resize(n_);
    first_edge_.resize(n_ + 1);
    for (std::size_t k = 0; k < segs_.size(); ++k) {
        const segment& s = segs_[k];
        const bool top = k + 1 == segs_.size();
        for (std::size_t i = 0; i < s.g->n; ++i) {
            const std::size_t m = s.offset + i;
            desc_[m] = s.g->descs[i];
            region_fn_[m] = s.g->regions[i];
            flags_[m] = s.g->flags[i];
            first_edge_[m] = edges_.size();
            if (exp_first[m + 1] > exp_first[m]) {
                // a tf::expr: a view of the root of each segment its objects expand to
                node_desc v = *s.g->descs[i];
                v.kind = op_kind::view;
                v.pure = false;
                v.rule = extent_rule::last;
                v.children = 1;
                own_desc_.push_back(v);
                desc_[m] = &own_desc_[own_desc_.size() - 1];
                flags_[m].kind = op_kind::view;
                flags_[m].leaf = false;
                flags_[m].pure = false;
                flags_[m].materialized = true;
                for (std::uint32_t x = exp_first[m]; x < exp_first[m + 1]; ++x) {
                    const segment& sg = segs_[exp_seg[x]];
                    const std::size_t root = sg.offset + sg.g->n - 1;
                    bool dup = false;
                    for (std::size_t e = first_edge_[m]; e < edges_.size() && !dup; ++e) dup = edges_[e].child == root;
                    if (!dup) edges_.push_back({m, root, false});
                }
            } else {
                for (std::size_t e = s.g->first_edge[i]; e < s.g->first_edge[i + 1]; ++e)
                    edges_.push_back(
                        {m, s.offset + s.g->edges[e].child, s.g->edges[e].control, s.g->edges[e].extents_only});
            }
            // a segment's root is read by the tf::expr leaves that hide it; only the top graph's nodes are fetched
            if (!top) flags_[m].fetched = false;
            max_children_ = std::max(max_children_, desc_[m]->children);
        }
    }
    first_edge_[n_] = edges_.size();
}

TYPEFLOW_DECL void plan_core::finish() {
    // 1. the tf::expr objects below the fetches, each expanded once, in segments before their readers
    const std::uint32_t top = provisional_++;
    segment t;
    t.g = top_;
    pending_.push_back(t);
    seg_of_.push_back(none);
    discover(top);
    seg_of_[top] = static_cast<std::uint32_t>(segs_.size());
    segs_.push_back(t);
    merge();
    const std::size_t top_offset = segs_[segs_.size() - 1].offset;
    // 2. the node objects
    first_inst_.assign(n_, none);
    last_inst_.assign(n_, none);
    fed_dims_.resize(n_);
    fed_.resize(n_);
    feed_ptr_.resize(n_);
    last_.resize(n_);
    in_ptr_.resize(max_children_ + 1);
    in_dims_.resize(max_children_ + 1);
    compute_last_reads();
    // segments in order, so that an object two segments share is computed in the first
    for (std::size_t k = 0; k + 1 < segs_.size(); ++k) walk(segs_[k].offset + segs_[k].g->n - 1, segs_[k].root);
    for (std::size_t k = 0; k < fetches_.size(); ++k) {
        fetch& f = fetches_[k];
        f.inst = walk(f.node + top_offset, f.obj);
        f.node = insts_[f.inst].node;  // an earlier segment's node when shared
        f.id = desc_[f.node]->pure ? nullptr : insts_[f.inst].id;
        f.primary = k;
        for (std::size_t j = 0; j < k; ++j)
            if (fetches_[j].node == f.node && fetches_[j].id == f.id) {
                f.primary = j;
                break;
            }
    }
    // conds: which instances run only in a branch, and when
    plan_branches();
    if (has_conds_) plan_recorded_scans();
    // a shared instance lives until the last reader in any segment, and so does
    // what it aliases (a view's source, a forwarding kernel's child 0)
    for (bool grew = !shared_.empty(); grew;) {
        grew = false;
        for (const shared_read& r : shared_)
            if (last_[r.reader] > last_[r.node]) {
                last_[r.node] = last_[r.reader];
                grew = true;
            }
        if (grew) extend_aliased();
    }
    ready_after_.assign(n_, 0);
    for (const fetch& f : fetches_)
        if (computed(f.node)) ready_after_[f.node] = 1;
    for (const fetch& f : fetches_)
        if (desc_[f.node]->outputs > 1)
            typeflow::detail::raise(typeflow::detail::message()
                                    << "fetch: node '" << desc_[f.node]->name << "' has " << desc_[f.node]->outputs
                                    << " outputs; fetch them with tf::output<K>(node)");
    // outputs 1.. of multi-output instances
    std::size_t extras = 0, max_outputs = 1;
    for (instance& in : insts_) {
        in.first_extra = static_cast<std::uint32_t>(extras);
        extras += desc_[in.node]->outputs - 1;
        max_outputs = std::max(max_outputs, desc_[in.node]->outputs);
    }
    extra_dims_.resize(extras);
    extra_off_.resize(extras);
    out_ptr_.resize(max_outputs);
    // nodes in device memory: the plan keeps copies of their placeholders and constants there;
    // control flow reads its predicates and counters on the host, so it stays on host devices
    for (const instance& in : insts_) {
        if (!on_device(in.node)) continue;
        device_ = true;
        const node_desc& d = *desc_[in.node];
        if (d.conditional || d.loop)
            typeflow::detail::raise(typeflow::detail::message()
                                    << d.name << ": control flow (cond, while_loop, scan) runs on host devices only; "
                                    << "place it on tf::cpu and move its operands with tf::to<tf::cpu>");
    }
    if (device_) {
        leaf_copies_.assign(insts_.size(), leaf_copy{});
        swap_.assign(insts_.size(), 0);
        for (std::uint32_t k = 0; k < insts_.size(); ++k) {
            const std::size_t i = insts_[k].node;
            if (!flags_[i].assign || flags_[i].immediate_write || flags_[i].locked || !on_device(i) || desc_[i]->outputs != 1 ||
                desc_[i]->kind != op_kind::elementwise)
                continue;
            const std::uint32_t vk = child_ref(insts_[k], 0);
            std::size_t writers = 0;  // assigns of the same variable (any instance of its storage)
            for (std::uint32_t q = 0; q < insts_.size(); ++q)
                if (flags_[insts_[q].node].assign && insts_[child_ref(insts_[q], 0)].id == insts_[vk].id) ++writers;
            swap_[k] = writers == 1 && desc_[insts_[vk].node]->mirror != nullptr;
        }
        written_.assign(insts_.size(), 0);
        for (const instance& in : insts_)
            for (std::uint32_t j = desc_[in.node]->writes_first; j < desc_[in.node]->writes_end; ++j)
                written_[child_ref(in, j)] = 1;
    }
    // kernel state kept across runs, per instance
    states_.assign(insts_.size(), nullptr);
    for (std::size_t k = 0; k < insts_.size(); ++k)
        if (const node_desc& d = *desc_[insts_[k].node]; d.make_state) states_[k] = d.make_state();
    // 3. the operands of each fused region
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
    plan_epilogues();
    plan_recording();
}

TYPEFLOW_DECL void plan_core::plan_epilogues() {
    epi_at_.assign(insts_.size(), none);
    if (has_conds_) return;  // instances in branches and loops run at steps of their own
    // per node: how many edges read its elements, and the last such reader
    array<std::uint32_t> readers(n_), reader(n_);
    for (const graph::edge& e : edges_)
        if (!e.extents_only) {
            ++readers[e.child];
            reader[e.child] = static_cast<std::uint32_t>(e.parent);
        }
    const auto single = [&](std::size_t i) { return first_inst_[i] != none && insts_[first_inst_[i]].next == none; };
    const auto shared = [&](std::size_t i) {
        for (const shared_read& s : shared_)
            if (s.node == i) return true;
        return false;
    };
    for (std::size_t m = 0; m < n_; ++m) {
        const node_desc& d = *desc_[m];
        if (!d.eval_epilogue || !computed(m) || flags_[m].fetched || readers[m] != 1 || !single(m) || shared(m)) continue;
        const std::size_t add = reader[m];
        if (desc_[add]->epilogue != epilogue_role::bias_add || flags_[add].assign || shared(add)) continue;
        std::size_t r = add;
        bool relu = false;
        if (!flags_[add].materialized) {  // fused: its one reader is a relu that roots the region
            if (flags_[add].fetched || readers[add] != 1) continue;
            r = reader[add];
            if (desc_[r]->epilogue != epilogue_role::relu || flags_[r].assign || shared(r)) continue;
            relu = true;
        }
        if (!is_region_root(r) || !single(r) || desc_[r]->memory != d.memory || desc_[r]->type != d.type) continue;
        if (flags_[r].fetched && !on_device(r)) continue;  // computed straight into its result tensor
        std::size_t kids[2] = {n_, n_}, data = 0;
        for (std::size_t e = first_edge_[add]; e < first_edge_[add + 1]; ++e)
            if (!edges_[e].control) {
                if (data < 2) kids[data] = edges_[e].child;
                ++data;
            }
        if (data != 2 || desc_[r]->control_inputs != 0) continue;
        const std::size_t b = kids[0] == m ? kids[1] : kids[1] == m ? kids[0] : n_;
        // the bias: a leaf or a node computed before the matmul, in the same memory and dtype
        if (b == n_ || b == m || !(flags_[b].leaf || (computed(b) && b < m)) || !single(b) || desc_[b]->type != d.type ||
            desc_[b]->memory != d.memory || desc_[b]->static_dims.rank != 1)
            continue;
        epilogue_pair p;
        p.m = first_inst_[m];
        p.r = first_inst_[r];
        p.bias = first_inst_[b];
        p.relu = relu;
        epi_at_[p.m] = epi_at_[p.r] = static_cast<std::uint32_t>(epis_.size());
        epis_.push_back(p);
        // the matmul's buffer holds the region's value: it lives as long as the region's would
        last_[m] = std::max(last_[m], last_[r]);
    }
    // the bias gradients: m = matmul(a, g) and a later r = sum<0>(g) or sum_like(g, b), g read by both
    for (std::size_t m = 0; m < n_; ++m) {
        const node_desc& d = *desc_[m];
        if (!d.eval_epilogue || !d.bias_grad_epilogue || !computed(m) || !single(m) || shared(m) || epi_at_[first_inst_[m]] != none)
            continue;
        const std::size_t g = child_node(m, 1);
        for (std::size_t r = m + 1; r < n_; ++r) {
            const node_desc& rd = *desc_[r];
            if (!rd.sums_matrix_rows || !computed(r) || !single(r) || shared(r) || child_node(r, 0) != g ||
                epi_at_[first_inst_[r]] != none || rd.memory != d.memory || rd.type != d.type || rd.control_inputs != 0 ||
                (flags_[r].fetched && !on_device(r)))
                continue;
            epilogue_pair p;
            p.m = first_inst_[m];
            p.r = first_inst_[r];
            p.bias = p.r;
            p.grad = true;
            epi_at_[p.m] = epi_at_[p.r] = static_cast<std::uint32_t>(epis_.size());
            epis_.push_back(p);
            break;
        }
    }
}

TYPEFLOW_DECL void plan_core::plan_recording() {
    // runs bracketed by their device spaces' enter and leave
    for (const instance& in : insts_) {
        const memory_space* m = desc_[in.node]->memory;
        if (!on_device(in.node) || !m->enter) continue;
        bool known = false;
        for (const memory_space* g : gates_) known |= g == m;
        if (!known) gates_.push_back(m);
    }
    for (std::size_t a = 1; a < gates_.size(); ++a)  // address order: two runs enter shared spaces in one order
        for (std::size_t b = a; b > 0 && std::less<const memory_space*>()(gates_[b], gates_[b - 1]); --b)
            std::swap(gates_[b], gates_[b - 1]);
    if (!device_ || has_conds_) return;
    const auto same_space = [&](std::uint32_t r) { return on_device(insts_[r].node) && desc_[insts_[r].node]->memory == rec_mem_; };
    for (std::uint32_t k = 0; k < insts_.size(); ++k) {
        const instance& in = insts_[k];
        const std::size_t i = in.node;
        if (!computed(i)) continue;
        const node_desc& d = *desc_[i];
        if (!on_device(i) || !d.memory->begin_recording || (rec_mem_ && d.memory != rec_mem_) || d.loop || d.conditional ||
            !d.replayable || flags_[i].locked || flags_[i].immediate_write) {
            rec_mem_ = nullptr;
            return;
        }
        rec_mem_ = d.memory;
        bool reads_own = true;
        if (is_region_root(i))
            for (std::uint32_t o = 0; o < in.operands; ++o) reads_own = reads_own && same_space(operand_refs_[in.first_operand + o]);
        else
            for (std::size_t j = 0; j < d.children; ++j) reads_own = reads_own && same_space(child_ref(in, j));
        if (!reads_own) {
            rec_mem_ = nullptr;
            return;
        }
    }
    if (!rec_mem_) return;
    recordable_ = true;
    key_len_ = 2 * insts_.size() + 1;
    key_.resize(key_len_);
    keys_.resize(max_recordings * key_len_);
    rec_.assign(max_recordings, nullptr);
    rec_evals_.assign(max_recordings, 0);
}

TYPEFLOW_DECL void plan_core::drop_recordings() noexcept {
    for (std::size_t s = 0; s < slots_; ++s)
        if (rec_[s]) {
            rec_mem_->drop(rec_[s]);
            rec_[s] = nullptr;
        }
    slots_ = next_slot_ = 0;
}

TYPEFLOW_DECL bool plan_core::replay_or_record(run_stats& stats) {
    // the pointers this run's work reads and writes
    std::size_t q = 0;
    for (const instance& in : insts_) {
        key_[q++] = in.ptr;
        key_[q++] = in.buf;
    }
    key_[q] = work_;
    const std::size_t bytes = key_len_ * sizeof(const void*);
    std::size_t s = 0;
    while (s < slots_ && std::memcmp(&keys_[s * key_len_], key_.data(), bytes) != 0) ++s;
    if (s == slots_) {  // met for the first time: run as usual, recorded when met again
        if (slots_ < max_recordings) {
            s = slots_++;
        } else {
            s = next_slot_;
            next_slot_ = (next_slot_ + 1) % max_recordings;
            if (rec_[s]) rec_mem_->drop(rec_[s]);
            rec_[s] = nullptr;
        }
        std::memcpy(&keys_[s * key_len_], key_.data(), bytes);
        return false;
    }
    if (!rec_[s]) {
        if (!rec_mem_->begin_recording()) return false;
        const std::size_t before = stats.evaluations;
        void* r = nullptr;
        try {
            (void)compute_all(stats, nullptr);
            r = rec_mem_->end_recording(true);
        } catch (...) {
            (void)rec_mem_->end_recording(false);
        }
        stats.evaluations = before;
        if (!r) {  // the device could not record this work: it runs as usual, now and from now on
            recordable_ = false;
            drop_recordings();
            return false;
        }
        rec_[s] = r;
        rec_evals_[s] = stats.evaluations - before;
        ++stats.recordings;
    }
    rec_mem_->replay(rec_[s]);
    stats.evaluations += rec_evals_[s];
    ++stats.replays;
    return true;
}

TYPEFLOW_DECL void plan_core::report_ready(const ready_hook& hook, std::size_t i) const {
    for (std::size_t k = 0; k < fetches_.size(); ++k) {
        const fetch& f = fetches_[k];
        const bool mine = i == n_ ? !computed(f.node) : f.node == i;
        if (!mine) continue;
        // a node in device memory: its value is copied out now (step 6 copies it again)
        if (i != n_ && device_ && on_device(f.node) && bytes_of(f.inst))
            desc_[f.node]->memory->download(fetches_[f.primary].data, insts_[f.inst].ptr, bytes_of(f.inst));
        // the hook may wait for other threads' runs on these devices (a collective): they may enter meanwhile
        for (std::size_t g = gates_.size(); g > 0; --g) gates_[g - 1]->leave();
        struct reenter {
            const typeflow::detail::pod_vector<const memory_space*>& g;
            ~reenter() {
                for (const memory_space* m : g) m->enter();
            }
        } again{gates_};
        hook.fn(hook.ctx, k, fetches_[f.primary].data);
    }
}

TYPEFLOW_DECL_HOT void plan_core::run_core(run_stats& stats, const feed_ref* feeds, std::size_t n_feeds,
                                           const ready_hook* hook) {
    // 1. feeds: one per placeholder
    for (std::size_t j = 1; j < n_feeds; ++j)
        for (std::size_t k = 0; k < j; ++k)
            if (feeds[j].key == feeds[k].key) raise_fed_twice(feeds[j].name);
    bool changed = !bound_;
    for (std::size_t i = 0; i < n_; ++i) {
        const node_desc& d = *desc_[i];
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
    // the run's device work does not interleave with other threads' on the same spaces
    struct gate_guard {
        const typeflow::detail::pod_vector<const memory_space*>& g;
        std::size_t held = 0;
        ~gate_guard() {
            while (held) g[--held]->leave();
        }
    } gate{gates_};
    for (const memory_space* m : gates_) {
        m->enter();
        ++gate.held;
    }
    // 2. extents and memory, re-planned only when a dyn extent changed
    if (changed) {
        drop_recordings();
        rebind();
        ++stats.rebinds;
    }
    // 3. results: a fetched node is computed straight into its result tensor
    prepare_results();
    if (partial() && active_for_ != keep_) mark_active();
    // 4. where each instance's elements are in this run
    for (std::size_t i = 0; i < n_; ++i) {
        const node_desc& d = *desc_[i];
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) {
            instance& in = insts_[k];
            if (d.placeholder) in.ptr = device_ && on_device(i) ? device_leaf(k, feed_ptr_[i]) : feed_ptr_[i];
            else if (d.kind == op_kind::leaf && device_ && on_device(i))
                in.ptr = device_leaf(k, d.mirror ? nullptr : d.data(in.obj));
            else if (d.kind == op_kind::leaf) in.ptr = d.data(in.obj);
            else if (d.kind == op_kind::view && d.rule == extent_rule::output && d.output_index > 0) {
                const instance& src = insts_[child_ref(in, 0)];
                in.ptr = static_cast<const std::byte*>(src.ptr) + extra_off_[src.first_extra + d.output_index - 1];
            } else if (d.kind == op_kind::view) in.ptr = insts_[child_ref(in, 0)].ptr;
            else if (d.forwards && forwarded_[k]) in.ptr = insts_[child_ref(in, 0)].ptr;
            else if (epi_at_[k] != none && epis_[epi_at_[k]].on && !epis_[epi_at_[k]].grad && epis_[epi_at_[k]].r == k)
                in.ptr = insts_[epis_[epi_at_[k]].m].buf;
            else if (device_ && swap_[k]) in.ptr = in.buf = next_buffer(k);
            else in.ptr = in.buf;
        }
    }
    // 5. compute, in topological order (an instance in a branch runs in its cond's step), or replay
    // this work's recording
    stats.evaluations = 0;
    stats.recorded_loops = 0;
    const bool locked =
        recordable_ && replay_ && !hook && !partial() && replay_or_record(stats) ? false : compute_all(stats, hook);
    // 6. fetched leaves and views are copied out, and every fetch of a node in device memory
    for (const fetch& f : fetches_) {
        const node_desc& d = *desc_[f.node];
        if (f.primary != static_cast<std::size_t>(&f - fetches_.data()) || !active(f.node)) continue;
        if (device_ && on_device(f.node)) {
            if (bytes_of(f.inst)) d.memory->download(f.data, insts_[f.inst].ptr, bytes_of(f.inst));
            continue;
        }
        if (d.kind != op_kind::leaf && d.kind != op_kind::view) continue;
        std::memcpy(f.data, insts_[f.inst].ptr, bytes_of(f.inst));
    }
    if (hook) report_ready(*hook, n_);
    // the device work so far is done and its errors raised before any variable is written
    if (device_)
        for (const arena_block& blk : arenas_)
            if (!blk.mem->host && blk.mem->finish) blk.mem->finish();
    // 7. writes of assigns, in topological order (the later of two writes wins; a branch not taken writes nothing).
    // Locked updates are computed first, all of them, then written, under the update lock: they read the
    // variables as the lock finds them, and no other locked update runs in between.
    std::unique_lock<std::mutex> update_lock;
    if (locked) {
        update_lock = std::unique_lock<std::mutex>(locked_update_mutex());
        for (std::size_t i = 0; i < n_; ++i)
            if (flags_[i].locked && computed(i) && active(i))
                for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next)
                    if (!has_conds_ || ctx_[k] == 0) compute(i, k, stats);
    }
    for (std::size_t i = 0; i < n_; ++i)
        if (flags_[i].assign && !flags_[i].immediate_write && active(i))
            for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next)
                if (!has_conds_ || ctx_[k] == 0 || ran_[k]) write(i, insts_[k]);
    stats.arena_bytes = arena_bytes_;
    // the device work of this run is done before it returns (its errors are this run's)
    if (device_)
        for (const arena_block& b : arenas_)
            if (!b.mem->host && b.mem->finish) b.mem->finish();
    // 8. a node fetched twice: every such result shares the first one's tensor; a
    // fetch past the kept ones is empty
    for (fetch& f : fetches_)
        if (f.primary != static_cast<std::size_t>(&f - fetches_.data()))
            f.fns->share(f.result, fetches_[f.primary].result);
    for (std::size_t k = keep_; k < fetches_.size(); ++k) fetches_[k].fns->reset(fetches_[k].result);
}

TYPEFLOW_DECL void plan_core::mark_active() {
    // the kept fetches, and every node a marked node reads (parents come after their children)
    active_.assign(n_, 0);
    for (std::size_t k = 0; k < keep_ && k < fetches_.size(); ++k) active_[fetches_[k].node] = 1;
    for (std::size_t i = n_; i-- > 0;)
        if (active_[i])
            for (std::size_t e = first_edge_[i]; e < first_edge_[i + 1]; ++e) active_[edges_[e].child] = 1;
    active_for_ = keep_;
}

TYPEFLOW_DECL_HOT bool plan_core::compute_all(run_stats& stats, const ready_hook* hook) {
    if (has_conds_) {
        for (std::size_t x = 0; x + 1 < ctx_first_.size(); ++x) cursor_[x] = ctx_first_[x];
        for (std::uint8_t& r : ran_) r = 0;
        for (std::uint8_t& r : recorded_) r = 0;
    }
    bool locked = false;  // locked updates wait for step 7
    for (std::size_t i = 0; i < n_; ++i) {
        if (!computed(i) || !active(i)) continue;
        if (flags_[i].locked) {
            locked = true;
            continue;
        }
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next)
            if (!has_conds_ || ctx_[k] == 0) compute(i, k, stats);
        if (hook && ready_after_[i]) report_ready(*hook, i);
    }
    return locked;
}

TYPEFLOW_DECL_HOT void plan_core::compute(std::size_t i, std::uint32_t k, run_stats& stats) {
    const node_desc& d = *desc_[i];
    instance& in = insts_[k];
    if (has_conds_) ran_[k] = 1;
    if (d.forwards && forwarded_[k]) {  // its result is its child 0's elements: copied only when fetched
        if (in.buf && bytes_of(k) && !(device_ && on_device(i))) std::memcpy(in.buf, in.ptr, bytes_of(k));
        return;
    }
    const epilogue_pair* epi = epi_at_[k] != none && epis_[epi_at_[k]].on ? &epis_[epi_at_[k]] : nullptr;
    if (epi && epi->r == k) return;  // its matmul computed it (grad: into this instance's buffer)
    if (d.kind == op_kind::elementwise) {
        for (std::uint32_t o = 0; o < in.operands; ++o) base_[o] = insts_[operand_refs_[in.first_operand + o]].ptr;
        region_fn_[i](regions_[k], base_.data(), in.buf, par_);
    } else {
        if (d.conditional) {  // the taken side's own instances first
            const bool p = *static_cast<const bool*>(insts_[child_ref(in, 0)].ptr);
            run_branch(side_ctx_[2 * std::size_t{k} + (p ? 0 : 1)], i, stats);
        }
        if (d.loop) run_loop(k, stats);
        for (std::size_t j = 0; j < d.children; ++j) {
            in_ptr_[j] = insts_[child_ref(in, j)].ptr;
            in_dims_[j] = &dims_[child_ref(in, j)];
        }
        for (std::size_t o = 1; o < d.outputs; ++o)
            out_ptr_[o - 1] = static_cast<std::byte*>(in.buf) + extra_off_[in.first_extra + o - 1];
        const kernel_ctx kc{in_ptr_.data(), in_dims_.data(), work_, states_[k], par_, out_ptr_.data()};
        if (epi && epi->grad) d.eval_epilogue(kc, in.buf, epilogue{nullptr, false, insts_[epi->r].buf});
        else if (epi) d.eval_epilogue(kc, in.buf, epilogue{insts_[epi->bias].ptr, epi->relu});
        else d.eval(kc, in.buf);
    }
    ++stats.evaluations;
    if (flags_[i].immediate_write) write(i, in);
}

TYPEFLOW_DECL void plan_core::run_branch(std::uint32_t x, std::size_t limit, run_stats& stats) {
    std::uint32_t& c = cursor_[x];
    while (c < ctx_first_[x + 1] && insts_[ctx_list_[c]].node < limit) {
        const std::uint32_t k = ctx_list_[c++];
        compute(insts_[k].node, k, stats);
    }
}

TYPEFLOW_DECL void plan_core::run_loop(std::uint32_t k, run_stats& stats) {
    const instance& in = insts_[k];
    const node_desc& d = *desc_[in.node];
    const std::uint32_t rec = loop_rec_.empty() ? none : loop_rec_[k];
    if (d.loop == 2 && rec != none && recorded_[k]) return;  // its while loop wrote its rows in this run (compute_all resets)
    const std::uint32_t var = child_ref(in, 0), body = child_ref(in, 2), cnd = child_ref(in, 3), lim = child_ref(in, 4);
    auto* counter = static_cast<std::int32_t*>(const_cast<void*>(insts_[child_ref(in, 1)].ptr));
    void* state = const_cast<void*>(insts_[var].ptr);
    const std::size_t bytes = bytes_of(var);
    const std::int64_t trips = d.loop == 2 ? dims_[lim].d[0] : *static_cast<const std::int64_t*>(insts_[lim].ptr);
    const std::uint32_t xb = side_ctx_[2 * std::size_t{k}], xc = side_ctx_[2 * std::size_t{k} + 1];
    // A while loop that records its gradient's scan (plan_recorded_scans): row t of the scan is
    // [1, the variable after step t] for the steps taken, then [0, the final variable], as the
    // scan's own steps would compute them.
    std::byte* rows = nullptr;
    const std::size_t elem = d.elem_size;
    if (d.loop == 1 && rec != none && dims_[rec].rank == 2 && dims_[rec].d[0] == trips &&
        static_cast<std::size_t>(dims_[rec].d[1]) * elem == bytes + elem)
        rows = static_cast<std::byte*>(insts_[rec].buf);
    const auto record = [&](std::int64_t t, bool taken) {
        std::byte* row = rows + static_cast<std::size_t>(t) * (bytes + elem);
        if (d.type == typeflow::dtype::float64) {
            const double f = taken ? 1.0 : 0.0;
            std::memcpy(row, &f, sizeof f);
        } else {
            const float f = taken ? 1.f : 0.f;
            std::memcpy(row, &f, sizeof f);
        }
        if (bytes) std::memcpy(row + elem, state, bytes);
    };
    // the variable starts from its initial value (two loops of one type may share their variable's node)
    if (bytes) std::memmove(state, insts_[child_ref(insts_[var], 0)].ptr, bytes);
    std::int64_t t = 0;
    for (; t < trips; ++t) {
        *counter = static_cast<std::int32_t>(t);
        for (std::uint32_t r = reset_first_[k]; r < reset_first_[k + 1]; ++r) cursor_[reset_list_[r]] = ctx_first_[reset_list_[r]];
        run_branch(xc, in.node, stats);
        if (!*static_cast<const bool*>(insts_[cnd].ptr)) break;
        run_branch(xb, in.node, stats);
        if (bytes) std::memmove(state, insts_[body].ptr, bytes);
        if (d.loop == 2 && bytes) std::memcpy(static_cast<std::byte*>(in.buf) + static_cast<std::size_t>(t) * bytes, state, bytes);
        if (rows) record(t, true);
    }
    if (rows) {
        for (; t < trips; ++t) record(t, false);
        recorded_[rec] = 1;
        ++stats.recorded_loops;
    }
}

TYPEFLOW_DECL void plan_core::plan_recorded_scans() {
    const std::size_t ni = insts_.size();
    for (std::uint32_t w = 0; w < ni; ++w) {
        const instance& in = insts_[w];
        const node_desc& d = *desc_[in.node];
        if (d.loop != 1 || d.children < 6 || ctx_[w] != 0) continue;
        if (d.type != typeflow::dtype::float32 && d.type != typeflow::dtype::float64) continue;
        const instance& fi = insts_[child_ref(in, 5)];  // the loop's functions (autodiff/loop.hpp, while_fn)
        const node_desc& fd = *desc_[fi.node];
        const void* sid = fd.linked ? fd.linked(fi.obj) : nullptr;
        if (!sid) continue;
        for (std::uint32_t q = 0; q < ni; ++q) {
            const instance& sc = insts_[q];
            const node_desc& sd = *desc_[sc.node];
            // the scan, at the top level and after the loop, of its dtype, not fetched
            if (sc.id != sid || sd.loop != 2 || ctx_[q] != 0 || sc.node <= in.node || sd.type != d.type ||
                is_fetched_instance(sc.node, sc.id))
                continue;
            if (loop_rec_.empty()) loop_rec_.assign(ni, none), recorded_.assign(ni, 0);
            if (loop_rec_[w] == none && loop_rec_[q] == none) loop_rec_[w] = q, loop_rec_[q] = w;
        }
    }
}

TYPEFLOW_DECL bool plan_core::in_loop_ctx(std::uint32_t x, std::uint32_t body, std::uint32_t cond) const {
    for (; x != 0; x = ctxs_[x].parent)
        if (x == body || x == cond) return true;
    return false;
}

TYPEFLOW_DECL void plan_core::hoist_invariants() {
    const std::size_t ni = insts_.size();
    // state: every loop's variable and counter (they move only with their loop)
    array<std::uint8_t> dep(ni), state(ni), ctx_dep(ctxs_.size());
    for (std::size_t w = 0; w < ni; ++w)
        if (desc_[insts_[w].node]->loop) state[child_ref(insts_[w], 0)] = state[child_ref(insts_[w], 1)] = 1;
    for (std::size_t w = 0; w < ni; ++w) {  // inner loops first (a loop's instance follows those inside it)
        const instance& lp = insts_[w];
        if (!desc_[lp.node]->loop) continue;
        const std::uint32_t xb = side_ctx_[2 * w], xc = side_ctx_[2 * w + 1], parent = ctx_[w];
        for (std::size_t k = 0; k < ni; ++k) dep[k] = 0;
        for (std::size_t x = 0; x < ctxs_.size(); ++x) ctx_dep[x] = 0;
        dep[child_ref(lp, 0)] = dep[child_ref(lp, 1)] = 1;
        // dep: depends on this loop's variable or counter, or must run at each iteration
        for (std::size_t k = 0; k < w; ++k) {
            if (!in_loop_ctx(ctx_[k], xb, xc)) continue;
            const instance& in = insts_[k];
            const node_desc& d = *desc_[in.node];
            const bool direct = ctx_[k] == xb || ctx_[k] == xc;
            bool depends = flags_[in.node].assign || d.make_state;
            if (state[k]) {
                depends = depends || (d.children > 0 && dep[child_ref(in, 0)]);  // a variable: its initial value
            } else {
                const std::size_t kids = d.conditional ? 3 : d.children;
                for (std::size_t j = 0; j < kids && !depends; ++j) depends = dep[child_ref(in, j)];
                if (d.conditional || d.loop)  // what runs inside it
                    depends = depends || ctx_dep[side_ctx_[2 * k]] || ctx_dep[side_ctx_[2 * k + 1]];
            }
            dep[k] = depends;
            if (depends) {
                for (std::uint32_t x = ctx_[k]; x != xb && x != xc && x != 0; x = ctxs_[x].parent) ctx_dep[x] = 1;
                continue;
            }
            // an invariant computed instance, cond or loop of this loop's own contexts runs once, before it
            if (!direct || state[k] || !(computed(in.node) || d.conditional || d.loop)) continue;
            ctx_[k] = parent;
            if (d.conditional || d.loop)
                for (std::size_t sd = 0; sd < 2; ++sd)
                    if (side_ctx_[2 * k + sd] != none) ctxs_[side_ctx_[2 * k + sd]].parent = parent;
            if (d.loop) ctx_[child_ref(in, 0)] = ctx_[child_ref(in, 1)] = parent;
        }
    }
}

TYPEFLOW_DECL std::uint32_t plan_core::intern_ctx(std::uint32_t parent, std::uint32_t pred, std::uint32_t side) {
    for (std::size_t x = 1; x < ctxs_.size(); ++x)
        if (ctxs_[x].parent == parent && ctxs_[x].pred == pred && ctxs_[x].side == side) return static_cast<std::uint32_t>(x);
    ctxs_.push_back({parent, pred, side, ctxs_[parent].depth + 1});
    return static_cast<std::uint32_t>(ctxs_.size() - 1);
}

TYPEFLOW_DECL std::uint32_t plan_core::common_ctx(std::uint32_t a, std::uint32_t b) const {
    while (ctxs_[a].depth > ctxs_[b].depth) a = ctxs_[a].parent;
    while (ctxs_[b].depth > ctxs_[a].depth) b = ctxs_[b].parent;
    while (a != b) {
        a = ctxs_[a].parent;
        b = ctxs_[b].parent;
    }
    return a;
}

TYPEFLOW_DECL void plan_core::plan_branches() {
    const std::size_t ni = insts_.size();
    for (const instance& in : insts_) has_conds_ = has_conds_ || desc_[in.node]->conditional || desc_[in.node]->loop;
    if (!has_conds_) return;
    // 1. contexts, readers before children (an instance's readers were made after it)
    ctxs_.push_back({});
    ctx_.assign(ni, none);
    side_ctx_.assign(2 * ni, none);
    for (const fetch& f : fetches_) ctx_[f.inst] = 0;
    for (std::size_t r = ni; r-- > 0;) {
        const instance& in = insts_[r];
        const node_desc& d = *desc_[in.node];
        if (ctx_[r] == none) ctx_[r] = 0;
        for (std::size_t j = 0; j < d.children; ++j) {
            std::uint32_t x = ctx_[r];
            if (d.conditional && j >= 3) continue;  // the leaves the gradient flows to: extents only
            if (d.conditional && j > 0) {
                std::uint32_t& s = side_ctx_[2 * r + j - 1];
                if (s == none) s = intern_ctx(ctx_[r], child_ref(in, 0), static_cast<std::uint32_t>(j - 1));
                x = s;
            }
            if (d.loop && (j == 2 || j == 3)) {  // a loop's body and condition: contexts of this loop alone
                std::uint32_t& s = side_ctx_[2 * r + j - 2];
                if (s == none) s = intern_ctx(ctx_[r], static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(j));
                x = s;
            }
            const std::uint32_t c = child_ref(in, j);
            ctx_[c] = ctx_[c] == none ? x : common_ctx(ctx_[c], x);
        }
    }
    hoist_invariants();
    // 2. each context's instances and the conds that run them (its owners), in run order
    const std::size_t nc = ctxs_.size();
    // a loop's contexts and those inside them, whose cursors restart at each iteration
    reset_first_.assign(ni + 1, 0);
    for (std::size_t k = 0; k < ni; ++k) {
        reset_first_[k] = static_cast<std::uint32_t>(reset_list_.size());
        if (!desc_[insts_[k].node]->loop) continue;
        for (std::uint32_t x = 1; x < nc; ++x)
            if (in_loop_ctx(x, side_ctx_[2 * k], side_ctx_[2 * k + 1])) reset_list_.push_back(x);
    }
    reset_first_[ni] = static_cast<std::uint32_t>(reset_list_.size());
    array<std::uint32_t> order;  // instances in run order
    for (std::size_t i = 0; i < n_; ++i)
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) order.push_back(k);
    array<std::uint32_t> all_first(nc + 1), own_first(nc + 1);
    ctx_first_.assign(nc + 1, 0);
    for (std::uint32_t k : order) {
        ++all_first[ctx_[k] + 1];
        if (computed(insts_[k].node) && ctx_[k] != 0) ++ctx_first_[ctx_[k] + 1];
        for (std::size_t s = 0; s < 2; ++s)
            if (side_ctx_[2 * k + s] != none) ++own_first[side_ctx_[2 * k + s] + 1];
    }
    for (std::size_t x = 0; x < nc; ++x) {
        all_first[x + 1] += all_first[x];
        own_first[x + 1] += own_first[x];
        ctx_first_[x + 1] += ctx_first_[x];
    }
    array<std::uint32_t> all(ni), owners(own_first[nc]);
    ctx_list_.resize(ctx_first_[nc]);
    {
        array<std::uint32_t> a(all_first), o(own_first), l(ctx_first_);
        for (std::uint32_t k : order) {
            all[a[ctx_[k]]++] = k;
            if (computed(insts_[k].node) && ctx_[k] != 0) ctx_list_[l[ctx_[k]]++] = k;
            for (std::size_t s = 0; s < 2; ++s)
                if (side_ctx_[2 * k + s] != none) owners[o[side_ctx_[2 * k + s]]++] = k;
        }
    }
    cursor_.resize(nc);
    ran_.assign(ni, 0);
    // 3. the step each instance runs at: its node's for context 0; else that of the
    // first owner after it (parents' contexts are numbered before their sides)
    estep_.assign(ni, 0);
    for (std::uint32_t k : order) estep_[k] = insts_[k].node;
    for (std::size_t x = 1; x < nc; ++x) {
        std::uint32_t o = own_first[x];
        for (std::uint32_t a = all_first[x]; a < all_first[x + 1]; ++a) {
            const std::uint32_t k = all[a];
            while (o + 1 < own_first[x + 1] && insts_[owners[o]].node < insts_[k].node) ++o;
            estep_[k] = estep_[owners[o]];
        }
    }
    // 4. lifetimes: an instance in a branch lives from its step to its last reader's;
    // an instance of context 0 that a branch reads lives until that read
    elast_.assign(ni, 0);
    for (std::size_t k = 0; k < ni; ++k)
        if (ctx_[k] != 0) elast_[k] = estep_[k];
    for (std::size_t r = ni; r-- > 0;) {
        const instance& in = insts_[r];
        const node_desc& d = *desc_[in.node];
        // a view, a fused node or a forwarding kernel reads its children as long as it is read
        const bool alias = d.kind == op_kind::view || !flags_[in.node].materialized || d.forwards;
        for (std::size_t j = 0; j < d.children; ++j) {
            if (d.conditional && j >= 3) continue;
            if (edges_[first_edge_[in.node] + j].extents_only) continue;
            const std::uint32_t c = child_ref(in, j);
            // the node-level lifetimes hold between instances of context 0, except below a fused
            // node or a view whose lifetime a branch extended (a fused node may have several
            // readers: the instances of one reader type, one of them in a branch)
            if (ctx_[r] == 0 && ctx_[c] == 0 && !alias) continue;
            const std::size_t step = ctx_[r] == 0 ? (alias ? last_[in.node] : in.node) : (alias ? elast_[r] : estep_[r]);
            if (ctx_[c] != 0) elast_[c] = std::max(elast_[c], step);
            else last_[insts_[c].node] = std::max(last_[insts_[c].node], step);
        }
        // a loop reads its variable's initial value again when it starts
        if (d.loop) {
            const std::uint32_t c = child_ref(insts_[child_ref(in, 0)], 0);
            const std::size_t step = ctx_[r] == 0 ? in.node : estep_[r];
            if (ctx_[c] != 0) elast_[c] = std::max(elast_[c], step);
            else last_[insts_[c].node] = std::max(last_[insts_[c].node], step);
        }
    }
    extend_aliased();
}

TYPEFLOW_DECL std::uint32_t plan_core::walk(std::size_t i, const void* obj) {
    const node_desc& d = *desc_[i];
    const void* id = d.identity(obj);
    if (d.variable) register_variable(names_, d.name, id);
    const bool op = d.kind != op_kind::leaf;
    // each distinct object is walked once (so names below it are checked);
    // a pure node has one instance, an impure one an instance per object
    if (op || !d.pure) {
        const std::uint32_t found = by_id_.find(id, i);
        if (found != none) return found;
    }
    if (op) {
        // the same object in an earlier segment (segments are walked in order),
        // or the normal-form copy of it that a tf::expr hides (the same
        // identity; its descriptor may differ in purity): read its value there
        // rather than computing it again, when both have a buffer (a fused
        // node is part of its region's loop)
        const std::uint32_t k = by_obj_.find(id, 0);
        if (k != none && desc_[insts_[k].node]->kind == d.kind && desc_[insts_[k].node]->eval == d.eval &&
            flags_[insts_[k].node].materialized && flags_[i].materialized) {
            by_id_.insert(id, i, k);
            shared_.push_back({insts_[k].node, i});
            return k;
        }
    }
    if (!op && d.pure && first_inst_[i] != none) return first_inst_[i];
    array<std::uint32_t> refs(d.children);
    // A pure node is one computation per type, except that what reads a loop's
    // variable or counter belongs to that loop: two loops of different types
    // may share the variable's and counter's types (one step function over
    // two inputs; a reverse scan per cost), and each runs its own copy of the
    // nodes that depend on them. So a pure node's instance is keyed on its
    // type and on the innermost loop it depends on: a pure loop by its node (a
    // pure loop built twice is one computation), any other loop by a number of
    // its own (its variable and counter may still be of pure types).
    std::uint32_t scope = none;
    const bool loop = op && d.loop != 0;
    if (loop)
        scopes_.push_back({d.pure ? static_cast<std::uint32_t>(i) : static_cast<std::uint32_t>(n_ + loops_walked_++),
                           static_cast<std::uint32_t>(child_node(i, 0)), static_cast<std::uint32_t>(child_node(i, 1))});
    if (d.expand) {
        // a tf::expr: a view of the root of its own segment
        const segment& s = segs_[seg_of_[expanded_.find(id, 0)]];
        refs[0] = walk(s.offset + s.g->n - 1, s.root);
    } else {
        array<const void*> kids(d.children);
        if (d.children) d.children_of(obj, kids.data());
        for (std::size_t j = 0; j < d.children; ++j) refs[j] = walk(child_node(i, j), kids[j]);
    }
    const std::uint32_t own = loop ? scopes_[scopes_.size() - 1].loop : none;
    if (loop) scopes_.pop_back();
    if (op && d.pure) {
        std::size_t depth = 0;  // the innermost: the latest on the stack
        for (std::size_t q = scopes_.size(); q-- > 0 && scope == none;)
            if (scopes_[q].var == i || scopes_[q].counter == i) scope = scopes_[q].loop;
        for (std::size_t j = 0; j < d.children && scope == none; ++j) {
            const std::uint32_t c = insts_[refs[j]].scope;
            if (c == none || c == own) continue;
            for (std::size_t q = scopes_.size(); q-- > depth;)
                if (scopes_[q].loop == c) {
                    depth = q + 1;
                    break;
                }
        }
        if (scope == none && depth > 0) scope = scopes_[depth - 1].loop;
    }
    std::uint32_t k = none;
    if (d.pure)
        for (std::uint32_t x = first_inst_[i]; x != none && k == none; x = insts_[x].next)
            if (insts_[x].scope == scope) k = x;
    if (k == none) {
        k = static_cast<std::uint32_t>(insts_.size());
        instance in;
        in.node = static_cast<std::uint32_t>(i);
        in.obj = obj;
        in.id = id;
        in.first_child = static_cast<std::uint32_t>(child_refs_.size());
        in.scope = scope;
        child_refs_.append(refs.data(), refs.size());
        insts_.push_back(in);
        if (last_inst_[i] == none) first_inst_[i] = k;
        else insts_[last_inst_[i]].next = k;
        last_inst_[i] = k;
    }
    if (op || !d.pure) by_id_.insert(id, i, k);
    if (op && by_obj_.find(id, 0) == none) by_obj_.insert(id, 0, k);
    return k;
}

TYPEFLOW_DECL void plan_core::collect_operands(std::uint32_t k) {
    const node_desc& d = *desc_[insts_[k].node];
    for (std::size_t j = d.control_inputs; j < d.children; ++j) {
        const std::uint32_t c = child_ref(insts_[k], j);
        const std::size_t ci = insts_[c].node;
        if (desc_[ci]->kind == op_kind::leaf || flags_[ci].materialized) operand_refs_.push_back(c);
        else collect_operands(c);
    }
}

TYPEFLOW_DECL bool plan_core::is_fetched_instance(std::size_t i, const void* id) const {
    for (const fetch& f : fetches_)
        if (f.node == i && (f.id == nullptr || f.id == id)) return true;
    return false;
}

TYPEFLOW_DECL void plan_core::rebind() {
    // extents, per instance (the instances of a tf::expr leaf read different segments)
    array<dims> d(insts_.size());
    array<std::uint8_t> fw(insts_.size());     // kernels whose result is their child 0 as is
    array<dims> ed(extra_dims_.size());        // outputs 1.. of multi-output instances
    array<std::size_t> eo(extra_off_.size());
    array<const dims*> in(max_children_ + 1);
    for (std::size_t i = 0; i < n_; ++i) {
        const node_desc& nd = *desc_[i];
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) {
            for (std::size_t j = 0; j < nd.children; ++j) in[j] = &d[child_ref(insts_[k], j)];
            switch (nd.rule) {
            case extent_rule::leaf:
                d[k] = nd.placeholder ? fed_[i] : nd.leaf_dims ? nd.leaf_dims(insts_[k].obj) : nd.static_dims;
                break;
            case extent_rule::function:
                d[k] = nd.infer(in.data());
                for (std::size_t o = 1; o < nd.outputs; ++o)
                    ed[insts_[k].first_extra + o - 1] = nd.infer_output(o, in.data());
                break;
            case extent_rule::output: {
                const instance& src = insts_[child_ref(insts_[k], 0)];
                d[k] = nd.output_index == 0 ? *in[0] : ed[src.first_extra + nd.output_index - 1];
                break;
            }
            case extent_rule::broadcast: d[k] = broadcast_operands(nd.name, in.data(), nd.children); break;
            case extent_rule::last: d[k] = *in[nd.children - 1]; break;
            case extent_rule::assign:
                check_assign_fits(nd.name, desc_[child_node(i, 0)]->name, *in[0], *in[1]);
                d[k] = *in[0];
                break;
            }
            // negative extents, or a count or byte count that overflows, stop here, before any buffer is sized
            if (!count_elements(d[k], nd.elem_size).ok) check_extents(nd.name, nd.type, nd.elem_size, d[k]);
            if (nd.forwards && computed(i)) fw[k] = nd.forwards(in.data());
            for (std::size_t o = 1; o < nd.outputs; ++o) {
                const dims& e = ed[insts_[k].first_extra + o - 1];
                if (!count_elements(e, nd.output_sizes[o]).ok) check_extents(nd.name, nd.type, nd.output_sizes[o], e);
            }
        }
    }
    // epilogues: on where the matmul is 2-D and the bias runs along its last axis
    for (epilogue_pair& p : epis_) {
        const dims& dm = d[p.m];
        if (p.grad) {  // g [k, n] summed over its rows into [n] (or [1, n])
            const dims& dg = d[child_ref(insts_[p.m], 1)];
            const dims& dr = d[p.r];
            p.on = dm.rank == 2 && dg.rank == 2 && dr.numel() == dg.d[1] &&
                   ((dr.rank == 1 && dr.d[0] == dg.d[1]) || (dr.rank == 2 && dr.d[0] == 1 && dr.d[1] == dg.d[1]));
        } else {
            p.on = dm.rank == 2 && d[p.r] == dm && d[p.bias].rank == 1 && d[p.bias].d[0] == dm.d[1];
        }
    }
    // fused regions: loop structure
    std::unique_ptr<region::layout[]> regions(new region::layout[insts_.size()]);
    for (std::size_t i = 0; i < n_; ++i) {
        if (!is_region_root(i)) continue;
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) {
            const instance& in0 = insts_[k];
            for (std::uint32_t o = 0; o < in0.operands; ++o) {
                const std::uint32_t ok = operand_refs_[in0.first_operand + o];
                const node_desc& od = *desc_[insts_[ok].node];
                opinfo_[o] = {&d[ok], od.elem_size, od.scalar};
            }
            regions[k] = region::plan(d[k], opinfo_.data(), in0.operands, static_cast<std::size_t>(par_.threads));
        }
    }
    // kernel workspace: one block, as large as the largest request (kernels run one at a time)
    std::size_t work = 0;
    std::uint32_t work_owner = none;
    for (std::size_t i = 0; i < n_; ++i) {
        const node_desc& nd = *desc_[i];
        if (!computed(i) || !nd.workspace) continue;
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) {
            for (std::size_t j = 0; j < nd.children; ++j) in[j] = &d[child_ref(insts_[k], j)];
            const std::size_t w = nd.workspace(kernel_ctx{nullptr, in.data(), nullptr, states_[k], par_});
            if (w > work) {
                work = w;
                work_owner = k;
            }
        }
    }
    // buffers: every computed instance that is not fetched (extents checked above: a node's
    // outputs each fit max_tensor_bytes; their sum, and the sum over buffers, are checked here)
    array<buffer_request> reqs;
    array<std::uint32_t> owner;
    for (std::size_t i = 0; i < n_; ++i) {
        if (!computed(i)) continue;
        for (std::uint32_t k = first_inst_[i]; k != none; k = insts_[k].next) {
            // forwarded: child 0's memory; fetched: the result's (in device memory: the arena's, copied out)
            if (fw[k] || (is_fetched_instance(i, insts_[k].id) && !on_device(i))) continue;
            if (!swap_.empty() && swap_[k]) continue;  // its variable's next buffer
            std::size_t bytes = static_cast<std::size_t>(d[k].numel()) * desc_[i]->elem_size;
            for (std::size_t o = 1; o < desc_[i]->outputs; ++o) {  // outputs 1.. after output 0, aligned
                const std::uint32_t x = insts_[k].first_extra + static_cast<std::uint32_t>(o) - 1;
                bytes = (bytes + arena_alignment - 1) / arena_alignment * arena_alignment;
                eo[x] = bytes;
                const std::size_t more = static_cast<std::size_t>(ed[x].numel()) * desc_[i]->output_sizes[o];
                if (more > max_tensor_bytes - bytes)
                    typeflow::detail::raise(typeflow::detail::message()
                                            << desc_[i]->name << ": its outputs, the first of shape " << d[k]
                                            << ", take more than " << max_tensor_bytes << " bytes together");
                bytes += more;
            }
            const bool branch = has_conds_ && ctx_[k] != 0;
            std::size_t first = branch ? estep_[k] : i;
            // a bias gradient is written by its matmul, at the matmul's step
            if (epi_at_[k] != none && epis_[epi_at_[k]].on && epis_[epi_at_[k]].grad && epis_[epi_at_[k]].r == k)
                first = std::min<std::size_t>(first, insts_[epis_[epi_at_[k]].m].node);
            // a scan that its while loop records is written at the loop's step
            if (!loop_rec_.empty() && loop_rec_[k] != none && desc_[i]->loop == 2) first = std::min<std::size_t>(first, insts_[loop_rec_[k]].node);
            reqs.push_back({bytes, first, flags_[i].assign ? n_ : branch ? elast_[k] : last_[i], 0});
            owner.push_back(k);
        }
    }
    // an arena too large to plan or to allocate: the error names its largest buffer (request r)
    const auto arena_failed = [&](std::size_t bytes, std::size_t r) {
        const node_desc& ld = *desc_[insts_[owner[r]].node];
        raise_allocation_failed("the arena of this run's intermediate buffers; the largest is the result of", bytes,
                                ld.name, d[owner[r]], ld.type);
    };
    // the kernel workspace, allocated before anything is committed
    void* new_work = nullptr;
    if (work > work_bytes_) {
        try {
            new_work = typeflow::detail::allocate_buffer(work);
        } catch (const std::bad_alloc&) {
            const node_desc& wd = *desc_[insts_[work_owner].node];
            raise_allocation_failed("the kernel workspace of", work, wd.name, d[work_owner], wd.type);
        }
    }
    // one arena per memory space (the devices whose tensors share memory share one)
    array<const memory_space*> spaces;
    for (std::uint32_t k : owner) {
        const memory_space* m = desc_[insts_[k].node]->memory;
        bool known = false;
        for (const memory_space* s : spaces) known |= s == m;
        if (!known) spaces.push_back(m);
    }
    array<arena_block> arenas(spaces.size());
    std::size_t total = 0;
    try {
        for (std::size_t a = 0; a < spaces.size(); ++a) {
            array<buffer_request> part;
            std::size_t sum = 0, largest = 0;  // the arena is never larger than its buffers side by side
            for (std::size_t r = 0; r < reqs.size(); ++r)
                if (desc_[insts_[owner[r]].node]->memory == spaces[a]) {
                    if (part.empty() || reqs[r].bytes > reqs[largest].bytes) largest = r;
                    part.push_back(reqs[r]);
                    const std::size_t padded = (reqs[r].bytes + arena_alignment - 1) / arena_alignment * arena_alignment;
                    sum = padded > max_tensor_bytes - sum ? max_tensor_bytes + 1 : sum + padded;
                }
            if (sum > max_tensor_bytes) arena_failed(sum, largest);
            const std::size_t size = plan_memory(part.data(), part.size());
            for (std::size_t r = 0, q = 0; r < reqs.size(); ++r)
                if (desc_[insts_[owner[r]].node]->memory == spaces[a]) reqs[r].offset = part[q++].offset;
            arenas[a].mem = spaces[a];
            arenas[a].bytes = size ? size : 1;
            try {
                arenas[a].p = static_cast<std::byte*>(spaces[a]->allocate(arenas[a].bytes));
            } catch (const std::bad_alloc&) {
                arena_failed(arenas[a].bytes, largest);
            }
            spaces[a]->zero(arenas[a].p, arenas[a].bytes);
            total += size;
        }
    } catch (...) {
        for (arena_block& b : arenas) b.release();
        if (new_work) typeflow::detail::free_buffer(new_work, work);
        throw;
    }
    // commit
    dims_ = static_cast<array<dims>&&>(d);
    forwarded_ = static_cast<array<std::uint8_t>&&>(fw);
    for (std::size_t k = 0; k < insts_.size(); ++k)
        if (forwarded_[k]) insts_[k].buf = nullptr;  // a fetched one gets its result's (prepare_results)
    extra_dims_ = static_cast<array<dims>&&>(ed);
    extra_off_ = static_cast<array<std::size_t>&&>(eo);
    regions_ = static_cast<std::unique_ptr<region::layout[]>&&>(regions);
    if (new_work) {
        if (work_) typeflow::detail::free_buffer(work_, work_bytes_);
        work_ = new_work;
        work_bytes_ = work;
    }
    for (arena_block& b : arenas_) b.release();
    arenas_ = static_cast<array<arena_block>&&>(arenas);
    arena_bytes_ = total;
    for (std::size_t r = 0; r < reqs.size(); ++r) {
        const memory_space* m = desc_[insts_[owner[r]].node]->memory;
        for (const arena_block& b : arenas_)
            if (b.mem == m) insts_[owner[r]].buf = b.p + reqs[r].offset;
    }
    fed_dims_ = fed_;
    bound_ = true;
}

TYPEFLOW_DECL void plan_core::compute_last_reads() {
    // a fused node is used exactly once: its reader's step is its region root's
    // (an extents-only edge reads no elements: it neither makes a reader nor extends a lifetime)
    array<std::size_t> reader(n_);
    for (const graph::edge& e : edges_)
        if (!e.extents_only) reader[e.child] = e.parent;
    array<std::size_t> step(n_);
    for (std::size_t i = n_; i-- > 0;)
        step[i] = flags_[i].locked ? n_  // computed at the end of the run (step 7)
                  : !flags_[i].leaf && !flags_[i].materialized && !flags_[i].fetched ? step[reader[i]]
                                                                                     : i;
    for (std::size_t i = 0; i < n_; ++i) last_[i] = flags_[i].fetched ? n_ : i;
    for (const graph::edge& e : edges_)
        if (!e.extents_only) last_[e.child] = std::max(last_[e.child], step[e.parent]);
    extend_aliased();
}

TYPEFLOW_DECL void plan_core::extend_aliased() {
    // a view's source is read as long as the view is (edges are grouped by parent); so is
    // child 0 of a kernel that may forward it (alias it as its result)
    for (std::size_t i = n_; i-- > 0;) {
        if (flags_[i].kind == op_kind::view) {
            for (std::size_t e = first_edge_[i]; e < first_edge_[i + 1]; ++e)
                last_[edges_[e].child] = std::max(last_[edges_[e].child], last_[i]);
        } else if (desc_[i]->forwards) {
            const std::size_t c = edges_[first_edge_[i]].child;
            last_[c] = std::max(last_[c], last_[i]);
        }
    }
}

TYPEFLOW_DECL_HOT void plan_core::prepare_results() {
    for (std::size_t k = 0; k < fetches_.size(); ++k) {
        fetch& f = fetches_[k];
        if (f.primary != k) {
            f.fns->reset(f.result);
            continue;
        }
        // the extents were checked by rebind: only memory can fail here (a tf::error from the tensor)
        try {
            f.data = f.fns->prepare(f.result, dims_[f.inst]);
        } catch (const error&) {
            result_failed(f);
        } catch (const std::bad_alloc&) {
            result_failed(f);
        }
        if (computed(f.node) && !on_device(f.node))
            for (std::uint32_t i = first_inst_[f.node]; i != none; i = insts_[i].next)
                if (f.id == nullptr ? i == f.inst : insts_[i].id == f.id) insts_[i].buf = f.data;
    }
}

TYPEFLOW_DECL void plan_core::result_failed(const fetch& f) const {
    const node_desc& d = *desc_[f.node];
    raise_allocation_failed("the result of fetch", count_elements(dims_[f.inst], d.elem_size).bytes, d.name,
                            dims_[f.inst], d.type);
}

namespace detail {
// The store of a variable's new value. Concurrent runs of a session read and
// update variables without locks (Hogwild; see session): ThreadSanitizer's
// suppressions (tests/tsan.supp) name this function, so it stays a function
// of its own.
TYPEFLOW_NOINLINE inline void store_variable(void* dst, const void* src, std::size_t bytes) noexcept {
    std::memcpy(dst, src, bytes);
}
}  // namespace detail

TYPEFLOW_DECL_HOT void plan_core::write(std::size_t i, const instance& in) {
    // output o of an assign goes to its child o (an update of a variable and
    // its slots: one output each)
    for (std::size_t o = 0; o < desc_[i]->outputs; ++o) {
        const std::size_t v = child_node(i, o);
        const std::uint32_t vk = child_ref(in, o);
        const void* src = o == 0 ? in.buf : static_cast<const std::byte*>(in.buf) + extra_off_[in.first_extra + o - 1];
        if (const node_desc& vd = *desc_[v]; device_ && on_device(v)) {
            if (swap_[&in - insts_.data()]) vd.mirror(insts_[vk].obj, vd.memory, runtime::detail::mirror_commit);
            else if (bytes_of(vk)) vd.memory->copy(vd.mirror(insts_[vk].obj, vd.memory, runtime::detail::mirror_write), src, bytes_of(vk));
            continue;
        }
        void* dst = const_cast<void*>(desc_[v]->data(insts_[vk].obj));
        detail::store_variable(dst, src, bytes_of(vk));
    }
}

}  // namespace typeflow::runtime

namespace typeflow::runtime {

TYPEFLOW_DECL const void* plan_core::device_leaf(std::uint32_t k, const void* host) {
    const node_desc& d = *desc_[insts_[k].node];
    const memory_space* m = d.memory;
    const std::size_t bytes = bytes_of(k);
    try {
        if (d.mirror)  // a variable: its own copy (newer than the host's once a kernel writes it)
            return d.mirror(insts_[k].obj, m, written_[k] ? detail::mirror_write : detail::mirror_read);
        leaf_copy& c = leaf_copies_[k];
        if (bytes > c.cap || !c.p) {
            if (c.p) m->free(c.p, c.cap);
            c.p = nullptr;
            c.cap = 0;
            c.p = m->allocate(bytes ? bytes : 1);
            c.cap = bytes ? bytes : 1;
            c.sent = ~std::size_t{0};
        }
        if (!bytes) return c.p;
        if (d.placeholder) {
            m->upload(c.p, host, bytes);
        } else if (bytes <= sizeof c.last) {  // a scalar or small constant: sent again only when it changed
            if (c.sent != bytes || std::memcmp(c.last, host, bytes) != 0) {
                m->upload(c.p, host, bytes);
                std::memcpy(c.last, host, bytes);
                c.sent = bytes;
            }
        } else if (c.sent != bytes) {  // a constant tensor: its elements never change
            m->upload(c.p, host, bytes);
            c.sent = bytes;
        }
        return c.p;
    } catch (const std::bad_alloc&) {
        raise_allocation_failed(d.placeholder ? "the device copy of placeholder" : "the device copy of leaf", bytes,
                                d.name, dims_[k], d.type);
    }
}

}  // namespace typeflow::runtime

namespace typeflow::runtime {

TYPEFLOW_DECL void* plan_core::next_buffer(std::uint32_t k) {
    const std::uint32_t vk = child_ref(insts_[k], 0);
    const node_desc& vd = *desc_[insts_[vk].node];
    try {
        return vd.mirror(insts_[vk].obj, vd.memory, detail::mirror_next);
    } catch (const std::bad_alloc&) {
        raise_allocation_failed("the next value of variable", bytes_of(vk), vd.name, dims_[vk], vd.type);
    }
}

}  // namespace typeflow::runtime

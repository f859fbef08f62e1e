// typeflow/io/impl/saver.ipp — tf::io::saver and checkpoint directories
// (see io/saver.hpp): inline in header-only builds, compiled once with
// TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/io/saver.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

namespace typeflow::io {

namespace detail {
TYPEFLOW_DECL std::string extension(format f) { return f == format::json ? ".json" : ".tfckpt"; }
TYPEFLOW_DECL std::string shard_suffix(std::size_t k, std::size_t n) {
    char b[64];
    std::snprintf(b, sizeof b, ".shard-%05zu-of-%05zu", k, n);
    return b;
}
// "<basename>-<step>.<ext>" with ext one of tfckpt, json, index: the step.
TYPEFLOW_DECL std::optional<std::int64_t> parse_checkpoint_name(const std::string& file, const std::string& basename) {
    if (file.size() <= basename.size() + 1 || file.compare(0, basename.size(), basename) != 0 ||
        file[basename.size()] != '-')
        return std::nullopt;
    std::size_t i = basename.size() + 1, j = i;
    while (j < file.size() && file[j] >= '0' && file[j] <= '9') ++j;
    if (j == i || j - i > 18) return std::nullopt;
    const std::string ext = file.substr(j);
    if (ext != ".tfckpt" && ext != ".json" && ext != ".index") return std::nullopt;
    return std::stoll(file.substr(i, j - i));
}
TYPEFLOW_DECL std::string directory_of(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash);
}
// The binary file ends with its end marker.
TYPEFLOW_DECL bool binary_tail_ok(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) return false;
    const auto size = static_cast<std::streamoff>(f.tellg());
    const auto n = static_cast<std::streamoff>(end_marker.size());
    if (size < n) return false;
    std::string tail(static_cast<std::size_t>(n), '\0');
    f.seekg(size - n);
    f.read(tail.data(), n);
    return f && tail == end_marker;
}
TYPEFLOW_DECL bool dims_match(const dims& pattern, const dims& got) {
    if (pattern.rank != got.rank) return false;
    for (std::size_t i = 0; i < got.rank; ++i)
        if (pattern.d[i] != dyn && pattern.d[i] != got.d[i]) return false;
    return true;
}

// Calls f with t as a pointer to the tensor<T> of dtype dt (t may be null).
template <class F>
decltype(auto) with_tensor(typeflow::dtype dt, void* t, F&& f) {
    switch (dt) {
        case dtype::float32: return f(static_cast<tensor<float>*>(t));
        case dtype::float64: return f(static_cast<tensor<double>*>(t));
        case dtype::int32: return f(static_cast<tensor<std::int32_t>*>(t));
        case dtype::int64: return f(static_cast<tensor<std::int64_t>*>(t));
        case dtype::boolean: break;
    }
    return f(static_cast<tensor<bool>*>(t));
}
// The dtype, extents and bytes of the tensor t points to (unnamed).
TYPEFLOW_DECL tensor_source source_of(typeflow::dtype dt, void* t) {
    return with_tensor(dt, t, [dt](auto* x) { return tensor_source{{}, dt, x->dims(), x->data()}; });
}
// A new tensor of dtype dt and extents d holding the bytes at buf. size() *
// sizeof(value_type) cannot wrap: the checkpoint reader accepted d only with
// detail::byte_count (at most max_tensor_bytes), and buf holds that many.
TYPEFLOW_DECL_HOT std::shared_ptr<void> tensor_from(typeflow::dtype dt, const dims& d, const std::byte* buf) {
    return with_tensor(dt, nullptr, [&](auto* x) -> std::shared_ptr<void> {
        using X = std::remove_pointer_t<decltype(x)>;
        auto fresh = std::make_shared<X>(d);
        if (fresh->size())
            std::memcpy(fresh->data(), buf, static_cast<std::size_t>(fresh->size()) * sizeof(typename X::value_type));
        return fresh;
    });
}
// The last step of a restore: the tensor t points to takes `fresh` (made by
// tensor_from) or, when fresh is null, the bytes at buf.
TYPEFLOW_DECL_HOT void commit_restore(typeflow::dtype dt, void* t, const std::byte* buf, void* fresh) noexcept {
    with_tensor(dt, t, [&](auto* x) {
        using X = std::remove_pointer_t<decltype(x)>;
        if (fresh) *x = std::move(*static_cast<X*>(fresh));
        else if (x->size())
            std::memcpy(x->data(), buf, static_cast<std::size_t>(x->size()) * sizeof(typename X::value_type));
    });
}
}  // namespace detail

TYPEFLOW_DECL bool is_complete_checkpoint(const std::string& path) {
    try {
        checkpoint_reader r(path);
        if (!r.is_index()) return r.file_format() == format::json || detail::binary_tail_ok(path);
        for (const auto& s : r.shards()) {
            const std::string sp = detail::directory_of(path) + "/" + s;  // a plain file name: the reader checked it
            checkpoint_reader sr(sp);
            if (sr.is_index() || (sr.file_format() == format::binary && !detail::binary_tail_ok(sp))) return false;
        }
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

TYPEFLOW_DECL std::vector<checkpoint_entry> list_checkpoints(const std::string& dir, const std::string& basename) {
    std::vector<checkpoint_entry> out;
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec), end;
    if (ec == std::errc::no_such_file_or_directory) return out;  // nothing saved yet
    // any other failure, opening or part way: an error, never a short list
    // (latest_checkpoint would resume from an older step)
    for (; !ec && it != end; it.increment(ec)) {
        const std::string file = it->path().filename().string();
        if (auto step = detail::parse_checkpoint_name(file, basename)) out.push_back({*step, dir + "/" + file});
    }
    if (ec) throw error("checkpoint: cannot list directory '" + dir + "': " + ec.message());
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.step != b.step ? a.step < b.step : a.path < b.path;
    });
    return out;
}

TYPEFLOW_DECL std::optional<std::string> latest_checkpoint(const std::string& dir, const std::string& basename) {
    auto all = list_checkpoints(dir, basename);
    for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (is_complete_checkpoint(it->path)) return it->path;
    return std::nullopt;
}

TYPEFLOW_DECL saver::saver(const saver&) = default;
TYPEFLOW_DECL saver::saver(saver&&) noexcept = default;
TYPEFLOW_DECL saver& saver::operator=(const saver&) = default;
TYPEFLOW_DECL saver& saver::operator=(saver&&) noexcept = default;
TYPEFLOW_DECL saver::~saver() = default;

TYPEFLOW_DECL std::vector<std::string> saver::names() const {
    std::vector<std::string> n;
    for (const auto& [k, e] : entries_) n.push_back(k);
    return n;
}

TYPEFLOW_DECL bool saver::contains(const std::string& name) const { return entries_.count(name) != 0; }

TYPEFLOW_DECL std::vector<tensor_source> saver::tensors() const { return sources(std::nullopt); }

TYPEFLOW_DECL std::string saver::save(const std::string& dir, std::int64_t step) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw error("saver: cannot create checkpoint directory '" + dir + "': " + ec.message());
    remove_stale_temporaries(dir);
    const std::string prefix = dir + "/" + opt_.basename + "-" + std::to_string(step);
    std::string path;
    if (opt_.shards <= 1) {
        path = prefix + detail::extension(opt_.file_format);
        write(path);
    } else {
        // One writer per shard, in parallel (as parameter servers would), then the index.
        std::vector<std::exception_ptr> errs(opt_.shards);
        std::vector<std::thread> threads;
        for (std::size_t k = 0; k < opt_.shards; ++k)
            threads.emplace_back([&, k] {
                try {
                    write_shard(prefix, k);
                } catch (...) {
                    errs[k] = std::current_exception();
                }
            });
        for (auto& t : threads) t.join();
        for (auto& e : errs)
            if (e) std::rethrow_exception(e);
        path = prefix + ".index";
        write_index(prefix);
    }
    rotate(dir, step);
    return path;
}

TYPEFLOW_DECL void saver::write(const std::string& path) const {
    write_checkpoint(path, sources(std::nullopt), opt_.file_format);
}

TYPEFLOW_DECL void saver::write_shard(const std::string& prefix, std::size_t k) const {
    write_checkpoint(prefix + detail::shard_suffix(k, opt_.shards) + detail::extension(opt_.file_format),
                     sources(k), opt_.file_format);
}
TYPEFLOW_DECL void saver::write_index(const std::string& prefix) const {
    const auto shard = shard_assignment();
    std::vector<tensor_info> infos;
    std::size_t i = 0;
    for (const auto& [name, e] : entries_) {
        const auto s = detail::source_of(e.dt, e.target);
        infos.push_back({name, s.dtype, s.shape, 0, 0, static_cast<std::uint32_t>(shard[i++])});
    }
    std::vector<std::string> files;
    const std::string base = prefix.substr(prefix.find_last_of('/') + 1);
    for (std::size_t k = 0; k < opt_.shards; ++k)
        files.push_back(base + detail::shard_suffix(k, opt_.shards) + detail::extension(opt_.file_format));
    write_checkpoint_index(prefix + ".index", files, std::move(infos), opt_.file_format);
}
TYPEFLOW_DECL std::vector<std::size_t> saver::shard_assignment() const {
    const std::size_t n = std::max<std::size_t>(1, opt_.shards);
    std::vector<std::pair<std::uint64_t, std::size_t>> order;
    std::size_t i = 0;
    for (const auto& [name, e] : entries_) {
        const auto s = detail::source_of(e.dt, e.target);
        order.push_back({detail::byte_count(s.dtype, s.shape).value_or(0), i++});
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::uint64_t> load(n, 0);
    std::vector<std::size_t> out(order.size(), 0);
    for (const auto& [bytes, idx] : order) {
        const auto k = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        out[idx] = k;
        load[k] += bytes;
    }
    return out;
}

TYPEFLOW_DECL void saver::restore(const std::string& path, const restore_options& ro) {
    const std::string head = "restore from '" + path + "' failed; no variable was changed:";
    const auto fail = [&](const std::vector<std::string>& problems) {
        std::string msg = head;
        for (const auto& p : problems) msg += "\n  " + p;
        throw error(msg);
    };
    std::optional<checkpoint_reader> top;
    try {
        top.emplace(path);
    } catch (const error& e) {
        fail({std::string(e.what()).substr(std::string_view("typeflow: ").size()) + " (variables: " + joined_names() + ")"});
    }
    const auto& file = top->tensors();

    // 1. names, dtypes, shapes
    struct match {
        const entry* e;
        std::size_t file_index;
    };
    std::vector<std::string> problems;
    std::vector<match> matched;
    std::unordered_set<std::string> taken;
    for (const auto& [name, e] : entries_) {
        const auto fi = top->find(name);
        if (!fi) {
            if (!ro.allow_missing)
                problems.push_back("variable '" + name + "': missing from the checkpoint" +
                                   " (restore_options{.allow_missing = true} restores a subset)");
            continue;
        }
        taken.insert(name);
        const auto& t = file[*fi];
        bool ok = true;
        if (t.dtype != e.dt) {
            problems.push_back("variable '" + name + "': dtype " + std::string(dtype_name(e.dt)) +
                               " in the program, " + std::string(dtype_name(t.dtype)) + " in the checkpoint");
            ok = false;
        }
        if (!detail::dims_match(e.pattern, t.shape)) {
            problems.push_back("variable '" + name + "': shape " + to_string(e.pattern) + " in the program, " +
                               to_string(t.shape) + " in the checkpoint");
            ok = false;
        }
        if (ok) matched.push_back({&e, *fi});
    }
    if (!ro.allow_unused)
        for (const auto& t : file)
            if (!taken.count(t.name))
                problems.push_back("tensor '" + t.name + "' of the checkpoint matches no variable" +
                                   " (restore_options{.allow_unused = true} ignores it)");
    if (problems.empty() && matched.empty() && !entries_.empty())
        problems.push_back("no variable (" + joined_names() + ") is in the checkpoint");
    if (!problems.empty()) fail(problems);

    // 2. read every byte into buffers. A buffer is allocated once the file
    // that holds its bytes is open: a binary file's reader has checked that
    // they lie inside the file, a JSON file's reader holds them already (an
    // index alone could claim any size).
    std::vector<std::shared_ptr<std::byte[]>> bufs(file.size());
    const auto buffer = [&](std::size_t fi) {
        bufs[fi] = std::shared_ptr<std::byte[]>(new std::byte[std::max<std::uint64_t>(1, file[fi].bytes)]);
        return bufs[fi].get();
    };
    const auto strip = [](const error& e) { return std::string(e.what()).substr(std::string_view("typeflow: ").size()); };
    if (!top->is_index()) {
        for (const auto& m : matched) buffer(m.file_index);
        try {
            top->read([&](std::size_t i) { return bufs[i].get(); });
        } catch (const error& e) {
            problems.push_back(strip(e));
        }
    } else {
        const std::string dir = detail::directory_of(path);
        for (std::size_t k = 0; k < top->shards().size(); ++k) {
            std::vector<std::size_t> wanted;  // file indices of the index in this shard
            for (const auto& m : matched)
                if (file[m.file_index].shard == k) wanted.push_back(m.file_index);
            if (wanted.empty()) continue;
            const std::string sp = dir + "/" + top->shards()[k];  // a plain file name: the reader checked it
            try {
                checkpoint_reader shard(sp);
                std::vector<std::byte*> dst(shard.tensors().size(), nullptr);
                std::vector<std::string> shard_problems;
                for (std::size_t fi : wanted) {
                    const auto& want = file[fi];
                    const auto si = shard.find(want.name);
                    if (!si) shard_problems.push_back("variable '" + want.name + "': missing from shard '" + sp + "'");
                    else if (shard.tensors()[*si].dtype != want.dtype || !(shard.tensors()[*si].shape == want.shape))
                        shard_problems.push_back("variable '" + want.name + "': shard '" + sp +
                                                 "' disagrees with the index on its dtype or shape");
                    else dst[*si] = buffer(fi);
                }
                if (shard_problems.empty()) shard.read([&](std::size_t i) { return dst[i]; });
                problems.insert(problems.end(), shard_problems.begin(), shard_problems.end());
            } catch (const error& e) {
                std::string names;
                for (std::size_t fi : wanted) names += (names.empty() ? "'" : ", '") + file[fi].name + "'";
                problems.push_back(strip(e) + " (variables in this shard: " + names + ")");
            }
        }
    }
    for (const auto& m : matched)  // every buffer was read above, or a problem was reported
        if (problems.empty() && !bufs[m.file_index]) problems.push_back("variable '" + file[m.file_index].name + "': its bytes were not read");
    if (!problems.empty()) fail(problems);

    // 3. prepare (may allocate), then commit (no failure possible)
    std::vector<std::shared_ptr<void>> fresh(matched.size());
    for (std::size_t i = 0; i < matched.size(); ++i)
        if (matched[i].e->rebind)
            fresh[i] = detail::tensor_from(matched[i].e->dt, file[matched[i].file_index].shape,
                                           bufs[matched[i].file_index].get());
    for (std::size_t i = 0; i < matched.size(); ++i)
        detail::commit_restore(matched[i].e->dt, matched[i].e->target, bufs[matched[i].file_index].get(),
                               fresh[i].get());
}

TYPEFLOW_DECL std::vector<tensor_source> saver::sources(std::optional<std::size_t> k) const {
    std::vector<std::size_t> shard;
    if (k) shard = shard_assignment();
    std::vector<tensor_source> out;
    std::size_t i = 0;
    for (const auto& [name, e] : entries_) {
        if (!k || shard[i] == *k) {
            auto s = detail::source_of(e.dt, e.target);
            s.name = name;
            out.push_back(s);
        }
        ++i;
    }
    return out;
}

TYPEFLOW_DECL std::string saver::joined_names() const {
    std::string s;
    for (const auto& [name, e] : entries_) s += (s.empty() ? "'" : ", '") + name + "'";
    return s.empty() ? std::string("none") : s;
}

TYPEFLOW_DECL void saver::rotate(const std::string& dir, std::int64_t keep_step) const {
    if (opt_.max_to_keep == 0) return;
    auto all = list_checkpoints(dir, opt_.basename);
    std::vector<std::int64_t> steps;
    for (const auto& c : all)
        if (steps.empty() || steps.back() != c.step) steps.push_back(c.step);
    if (steps.size() <= opt_.max_to_keep) return;
    const std::size_t drop = steps.size() - opt_.max_to_keep;
    std::error_code ec;
    for (std::size_t i = 0; i < drop; ++i) {
        if (steps[i] == keep_step) continue;
        const std::string prefix = opt_.basename + "-" + std::to_string(steps[i]) + ".";
        for (const auto& de : std::filesystem::directory_iterator(dir, ec)) {
            const std::string f = de.path().filename().string();
            if (f.compare(0, prefix.size(), prefix) == 0) std::filesystem::remove(de.path(), ec);
        }
    }
    fsync_directory(dir);
}

TYPEFLOW_DECL void saver::remove_stale_temporaries(const std::string& dir) const {
    std::error_code ec;
    const std::string lead = "." + opt_.basename + "-";
    for (const auto& de : std::filesystem::directory_iterator(dir, ec)) {
        const std::string f = de.path().filename().string();
        const auto t = f.rfind(".tmp.");
        if (f.compare(0, lead.size(), lead) != 0 || t == std::string::npos) continue;
        const std::string pid = f.substr(t + 5);
        if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
        const long p = std::stol(pid);
        if (p != static_cast<long>(::getpid()) && ::kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH)
            std::filesystem::remove(de.path(), ec);
    }
}

TYPEFLOW_DECL void saver::add_graph(const typeflow::detail::node_state* root) {
    using typeflow::detail::child_slot;
    using typeflow::detail::node_state;
    using typeflow::detail::variable_base;
    typeflow::detail::pointer_set seen;
    std::vector<const node_state*> stack{root};  // depth first, children in order (a graph can be deeper than the call stack)
    while (!stack.empty()) {
        const node_state* s = stack.back();
        stack.pop_back();
        if (!seen.insert(s->identity())) continue;
        for (std::size_t i = s->count; i-- > 0;) {
            const child_slot& c = s->slots()[i];
            if (c.destroy == &typeflow::detail::destroy_node_child) {
                stack.push_back(static_cast<const typeflow::detail::node_handle*>(static_cast<const void*>(c.bytes))->get());
                continue;
            }
            const auto variable = [&]<class T>(T*) {
                if (c.destroy != &variable_base<T>::destroy_in_slot) return false;
                const auto& v = *std::launder(reinterpret_cast<const variable_base<T>*>(c.bytes));
                add_storage(v.state().name, v.state().shape, v.storage());
                return true;
            };
            (void)(variable(static_cast<float*>(nullptr)) || variable(static_cast<double*>(nullptr)) ||
                   variable(static_cast<std::int32_t*>(nullptr)) || variable(static_cast<std::int64_t*>(nullptr)) ||
                   variable(static_cast<bool*>(nullptr)));
        }
    }
}

TYPEFLOW_DECL void saver::insert(const std::string& name, entry e) {
    auto it = entries_.find(name);
    if (it != entries_.end()) {
        if (it->second.identity == e.identity) return;
        throw error("saver: two different variables are named '" + name + "'");
    }
    entries_.emplace(name, std::move(e));
}

}  // namespace typeflow::io

// typeflow/io/saver.hpp — tf::io::saver: saves and restores variables (and
// optimizer slot variables) by name, in checkpoint directories that keep the
// last N checkpoints; latest_checkpoint(dir) finds the newest complete one.
//
//   tf::io::saver saver(train_op);                    // every variable train_op reaches, slots included
//   auto path = saver.save("ckpt_dir", step);          // atomic; keeps the last 5
//   if (auto last = tf::io::latest_checkpoint("ckpt_dir")) saver.restore(*last);
#pragma once
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <signal.h>
#include <sys/types.h>

#include <typeflow/core/tensor.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/io/checkpoint.hpp>

namespace typeflow::io {

/// How a saver writes checkpoints.
struct saver_options {
    format file_format = format::binary;  ///< binary, or JSON for inspection
    std::size_t max_to_keep = 5;          ///< checkpoints kept in a directory by save(); 0 keeps all
    std::size_t shards = 1;               ///< > 1: one file per shard plus an index file
    std::string basename = "ckpt";        ///< files are "<basename>-<step>.<ext>"
};

/// What a restore may leave out. Both default to false: the checkpoint and
/// the saver must hold exactly the same names.
struct restore_options {
    bool allow_missing = false;  ///< variables absent from the checkpoint keep their values (fine-tuning)
    bool allow_unused = false;   ///< tensors of the checkpoint that no variable takes are ignored
};

/// One checkpoint in a directory: its step and the path of its main file.
struct checkpoint_entry {
    std::int64_t step = 0;
    std::string path;
};

namespace detail {
inline std::string extension(format f) { return f == format::json ? ".json" : ".tfckpt"; }
inline std::string shard_suffix(std::size_t k, std::size_t n) {
    char b[64];
    std::snprintf(b, sizeof b, ".shard-%05zu-of-%05zu", k, n);
    return b;
}
// "<basename>-<step>.<ext>" with ext one of tfckpt, json, index: the step.
inline std::optional<std::int64_t> parse_checkpoint_name(const std::string& file, const std::string& basename) {
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
inline std::string directory_of(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash);
}
// The binary file ends with its end marker.
inline bool binary_tail_ok(const std::string& path) {
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
inline bool dims_match(const dims& pattern, const dims& got) {
    if (pattern.rank != got.rank) return false;
    for (std::size_t i = 0; i < got.rank; ++i)
        if (pattern.d[i] != dyn && pattern.d[i] != got.d[i]) return false;
    return true;
}
}  // namespace detail

/// True when the checkpoint at `path` (a file, or a sharded checkpoint's
/// index) is complete: its table of contents reads, its end marker is there,
/// and, for an index, every shard is complete.
inline bool is_complete_checkpoint(const std::string& path) {
    try {
        checkpoint_reader r(path);
        if (!r.is_index()) return r.file_format() == format::json || detail::binary_tail_ok(path);
        for (const auto& s : r.shards()) {
            const std::string sp = detail::directory_of(path) + "/" + s;
            checkpoint_reader sr(sp);
            if (sr.is_index() || (sr.file_format() == format::binary && !detail::binary_tail_ok(sp))) return false;
        }
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

/// The checkpoints "<basename>-<step>.{tfckpt,json,index}" in dir, by
/// ascending step (complete or not). Empty when dir does not exist.
inline std::vector<checkpoint_entry> list_checkpoints(const std::string& dir, const std::string& basename = "ckpt") {
    std::vector<checkpoint_entry> out;
    std::error_code ec;
    for (const auto& de : std::filesystem::directory_iterator(dir, ec)) {
        const std::string file = de.path().filename().string();
        if (auto step = detail::parse_checkpoint_name(file, basename)) out.push_back({*step, dir + "/" + file});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.step != b.step ? a.step < b.step : a.path < b.path;
    });
    return out;
}

/// The newest complete checkpoint in dir (the one of highest step), if any.
inline std::optional<std::string> latest_checkpoint(const std::string& dir, const std::string& basename = "ckpt") {
    auto all = list_checkpoints(dir, basename);
    for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (is_complete_checkpoint(it->path)) return it->path;
    return std::nullopt;
}

/// Saves and restores a set of named tensors: variables (found in the
/// expressions it is given: a variable, a loss, a train op with its optimizer
/// slots) and, with add(name, tensor, pattern), plain tensors whose extents
/// may be dyn. A restore validates every name, dtype and shape and reads
/// every byte before it changes anything: it changes all variables or none.
class saver {
public:
    saver() = default;
    /// Every variable the roots reach (variables, losses, train ops).
    template <class... R>
        requires(sizeof...(R) > 0 && (expression<R> && ...))
    explicit saver(const R&... roots) {
        (add(roots), ...);
    }
    /// The same, with options.
    template <class... R>
        requires((expression<R> && ...))
    explicit saver(saver_options o, const R&... roots) : opt_(std::move(o)) {
        (add(roots), ...);
    }

    /// Adds every variable `root` reaches (or `root` itself, a variable).
    /// Throws tf::error when two different variables share a name.
    template <expression E>
    saver& add(const E& root) {
        std::unordered_set<const void*> seen;
        collect(root, seen);
        return *this;
    }
    /// Adds a plain tensor under `name`; a restore checks its extents against
    /// `pattern` (a dyn extent matches any) and rebinds `t` to a new tensor of
    /// the stored extents. `t` must outlive the saver.
    template <value_type_c T>
    saver& add(const std::string& name, tensor<T>& t, const dims& pattern) {
        entry e;
        e.dt = dtype_of<T>;
        e.pattern = pattern;
        e.identity = &t;
        tensor<T>* target = &t;
        e.source = [target] { return tensor_source{{}, dtype_of<T>, target->dims(), target->data()}; };
        e.prepare = [target](std::shared_ptr<std::byte[]> buf, const dims& d) -> std::function<void()> {
            auto fresh = std::make_shared<tensor<T>>(d);
            if (fresh->size()) std::memcpy(fresh->data(), buf.get(), static_cast<std::size_t>(fresh->size()) * sizeof(T));
            return [target, fresh] { *target = std::move(*fresh); };
        };
        insert(name, std::move(e));
        return *this;
    }

    saver_options& options() noexcept { return opt_; }
    const saver_options& options() const noexcept { return opt_; }
    /// The names it saves, sorted.
    std::vector<std::string> names() const {
        std::vector<std::string> n;
        for (const auto& [k, e] : entries_) n.push_back(k);
        return n;
    }
    std::size_t size() const noexcept { return entries_.size(); }
    /// True when a tensor of this name is saved.
    bool contains(const std::string& name) const { return entries_.count(name) != 0; }
    /// The tensors it saves, as they are now (sorted by name; views, no copies).
    std::vector<tensor_source> tensors() const { return sources(std::nullopt); }

    /// Writes checkpoint "<dir>/<basename>-<step>" (creating dir), atomically,
    /// then deletes the oldest checkpoints beyond max_to_keep. Returns the path
    /// of its main file (".tfckpt", ".json", or ".index" when sharded).
    std::string save(const std::string& dir, std::int64_t step) {
        std::filesystem::create_directories(dir);
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

    /// Writes every tensor to one checkpoint file at `path` (atomically).
    void write(const std::string& path) const { write_checkpoint(path, sources(std::nullopt), opt_.file_format); }

    /// Writes shard k of options().shards to "<prefix>.shard-KKKKK-of-NNNNN.<ext>"
    /// (what one parameter server does for its own variables).
    void write_shard(const std::string& prefix, std::size_t k) const {
        write_checkpoint(prefix + detail::shard_suffix(k, opt_.shards) + detail::extension(opt_.file_format),
                         sources(k), opt_.file_format);
    }
    /// Writes "<prefix>.index", which makes the sharded checkpoint complete;
    /// call it after every shard is written.
    void write_index(const std::string& prefix) const {
        const auto shard = shard_assignment();
        std::vector<tensor_info> infos;
        std::size_t i = 0;
        for (const auto& [name, e] : entries_) {
            const auto s = e.source();
            infos.push_back({name, s.dtype, s.shape, 0, 0, static_cast<std::uint32_t>(shard[i++])});
        }
        std::vector<std::string> files;
        const std::string base = prefix.substr(prefix.find_last_of('/') + 1);
        for (std::size_t k = 0; k < opt_.shards; ++k)
            files.push_back(base + detail::shard_suffix(k, opt_.shards) + detail::extension(opt_.file_format));
        write_checkpoint_index(prefix + ".index", files, std::move(infos), opt_.file_format);
    }
    /// The shard of each tensor (in names() order): largest first, each to the
    /// least-filled shard, so shards hold about equal bytes.
    std::vector<std::size_t> shard_assignment() const {
        const std::size_t n = std::max<std::size_t>(1, opt_.shards);
        std::vector<std::pair<std::uint64_t, std::size_t>> order;
        std::size_t i = 0;
        for (const auto& [name, e] : entries_) {
            const auto s = e.source();
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

    /// Restores every tensor from the checkpoint at `path` (a file or a
    /// sharded checkpoint's index). All names, dtypes and shapes are checked
    /// and all bytes read and verified before any variable changes; on any
    /// problem it throws one tf::error naming the file and every variable
    /// concerned, and no variable changes.
    void restore(const std::string& path, const restore_options& ro = {}) {
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

        // 2. read every byte into buffers
        std::vector<std::shared_ptr<std::byte[]>> bufs(file.size());
        for (const auto& m : matched)
            bufs[m.file_index] = std::shared_ptr<std::byte[]>(new std::byte[std::max<std::uint64_t>(1, file[m.file_index].bytes)]);
        const auto strip = [](const error& e) { return std::string(e.what()).substr(std::string_view("typeflow: ").size()); };
        if (!top->is_index()) {
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
                const std::string sp = dir + "/" + top->shards()[k];
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
                        else dst[*si] = bufs[fi].get();
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
        if (!problems.empty()) fail(problems);

        // 3. prepare (may allocate), then commit (no failure possible)
        std::vector<std::function<void()>> commits;
        commits.reserve(matched.size());
        for (const auto& m : matched) commits.push_back(m.e->prepare(bufs[m.file_index], file[m.file_index].shape));
        for (auto& c : commits) c();
    }

private:
    struct entry {
        typeflow::dtype dt = typeflow::dtype::float32;
        dims pattern{};
        const void* identity = nullptr;
        std::function<tensor_source()> source;
        std::function<std::function<void()>(std::shared_ptr<std::byte[]>, const dims&)> prepare;
    };

    void insert(const std::string& name, entry e) {
        auto it = entries_.find(name);
        if (it != entries_.end()) {
            if (it->second.identity == e.identity) return;
            throw error("saver: two different variables are named '" + name + "'");
        }
        entries_.emplace(name, std::move(e));
    }

    template <class V>
    void add_variable(const V& v) {
        using T = value_type_t<V>;
        entry e;
        e.dt = dtype_of<T>;
        e.pattern = shape_t<V>::value;
        e.identity = v.identity();
        auto keep = std::shared_ptr<V>(new V(v));  // a copy shares the variable's storage
        e.source = [keep] {
            const auto& t = keep->value();
            return tensor_source{{}, dtype_of<T>, t.dims(), t.data()};
        };
        e.prepare = [keep](std::shared_ptr<std::byte[]> buf, const dims&) -> std::function<void()> {
            return [keep, buf = std::move(buf)] {
                auto& t = keep->value();
                if (t.size()) std::memcpy(t.data(), buf.get(), static_cast<std::size_t>(t.size()) * sizeof(T));
            };
        };
        insert(std::string(V::name()), std::move(e));
    }

    template <class E>
    void collect(const E& e, std::unordered_set<const void*>& seen) {
        if constexpr (typeflow::detail::is_variable_v<E>) {
            add_variable(e);
        } else if constexpr (E::is_leaf) {
            return;
        } else {
            if (!seen.insert(e.identity()).second) return;
            e.apply_children([&](const auto&... c) { (collect(c, seen), ...); });
        }
    }

    // Sources of every tensor, or of shard k's.
    std::vector<tensor_source> sources(std::optional<std::size_t> k) const {
        std::vector<std::size_t> shard;
        if (k) shard = shard_assignment();
        std::vector<tensor_source> out;
        std::size_t i = 0;
        for (const auto& [name, e] : entries_) {
            if (!k || shard[i] == *k) {
                auto s = e.source();
                s.name = name;
                out.push_back(s);
            }
            ++i;
        }
        return out;
    }

    std::string joined_names() const {
        std::string s;
        for (const auto& [name, e] : entries_) s += (s.empty() ? "'" : ", '") + name + "'";
        return s.empty() ? std::string("none") : s;
    }

    // Deletes the oldest checkpoints beyond max_to_keep (never the one of `keep_step`).
    void rotate(const std::string& dir, std::int64_t keep_step) const {
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

    // Temporary files of writers that died (".<basename>-*.tmp.<pid>", pid gone).
    void remove_stale_temporaries(const std::string& dir) const {
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

    saver_options opt_;
    std::map<std::string, entry> entries_;
};

}  // namespace typeflow::io

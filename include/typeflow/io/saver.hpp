// typeflow/io/saver.hpp — tf::io::saver: saves and restores variables (and
// optimizer slot variables) by name, in checkpoint directories that keep the
// last N checkpoints; latest_checkpoint(dir) finds the newest complete one.
//
//   tf::io::saver saver(train_op);                    // every variable train_op reaches, slots included
//   auto path = saver.save("ckpt_dir", step);          // atomic; keeps the last 5
//   if (auto last = tf::io::latest_checkpoint("ckpt_dir")) saver.restore(*last);
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <typeflow/core/config.hpp>
#include <typeflow/core/pod_vector.hpp>
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

/// True when the checkpoint at `path` (a file, or a sharded checkpoint's
/// index) is complete: its table of contents reads, its end marker is there,
/// and, for an index, every shard is complete.
TYPEFLOW_DECL bool is_complete_checkpoint(const std::string& path);

/// The checkpoints "<basename>-<step>.{tfckpt,json,index}" in dir, by
/// ascending step (complete or not). Empty when dir does not exist; a
/// tf::error naming dir when it exists but cannot be listed.
TYPEFLOW_DECL std::vector<checkpoint_entry> list_checkpoints(const std::string& dir,
                                                             const std::string& basename = "ckpt");

/// The newest complete checkpoint in dir (the one of highest step), if any.
TYPEFLOW_DECL std::optional<std::string> latest_checkpoint(const std::string& dir,
                                                           const std::string& basename = "ckpt");

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
    saver(const saver&);
    saver(saver&&) noexcept;
    saver& operator=(const saver&);
    saver& operator=(saver&&) noexcept;
    ~saver();

    /// Adds every variable `root` reaches (or `root` itself, a variable).
    /// Throws tf::error when two different variables share a name.
    template <expression E>
    saver& add(const E& root) {
        if constexpr (typeflow::detail::is_variable_v<E>)
            add_storage(root.name(), shape_t<E>::value, root.storage());
        else if constexpr (!E::is_leaf)  // an operation node: its only member is its state's handle
            add_graph(static_cast<const typeflow::detail::node_handle*>(static_cast<const void*>(&root))->get());
        return *this;
    }
    /// Adds a plain tensor under `name`; a restore checks its extents against
    /// `pattern` (a dyn extent matches any) and rebinds `t` to a new tensor of
    /// the stored extents. `t` must outlive the saver.
    template <value_type_c T>
    saver& add(const std::string& name, tensor<T>& t, const dims& pattern) {
        insert(name, entry{dtype_of<T>, pattern, &t, nullptr, &t, true});
        return *this;
    }

    saver_options& options() noexcept { return opt_; }
    const saver_options& options() const noexcept { return opt_; }
    /// The names it saves, sorted.
    std::vector<std::string> names() const;
    std::size_t size() const noexcept { return entries_.size(); }
    /// True when a tensor of this name is saved.
    bool contains(const std::string& name) const;
    /// The tensors it saves, as they are now (sorted by name; views, no copies).
    std::vector<tensor_source> tensors() const;

    /// Writes checkpoint "<dir>/<basename>-<step>" (creating dir), atomically,
    /// then deletes the oldest checkpoints beyond max_to_keep. Returns the path
    /// of its main file (".tfckpt", ".json", or ".index" when sharded).
    std::string save(const std::string& dir, std::int64_t step);

    /// Writes every tensor to one checkpoint file at `path` (atomically).
    void write(const std::string& path) const;

    /// Writes shard k of options().shards to "<prefix>.shard-KKKKK-of-NNNNN.<ext>"
    /// (what one parameter server does for its own variables).
    void write_shard(const std::string& prefix, std::size_t k) const;
    /// Writes "<prefix>.index", which makes the sharded checkpoint complete;
    /// call it after every shard is written.
    void write_index(const std::string& prefix) const;
    /// The shard of each tensor (in names() order): largest first, each to the
    /// least-filled shard, so shards hold about equal bytes.
    std::vector<std::size_t> shard_assignment() const;

    /// Restores every tensor from the checkpoint at `path` (a file or a
    /// sharded checkpoint's index). All names, dtypes and shapes are checked
    /// and all bytes read and verified before any variable changes; on any
    /// problem it throws one tf::error naming the file and every variable
    /// concerned, and no variable changes.
    void restore(const std::string& path, const restore_options& ro = {});

private:
    // One saved tensor, type-erased: `target` is a tensor<T> of dtype `dt`.
    struct entry {
        typeflow::dtype dt = typeflow::dtype::float32;
        dims pattern{};
        const void* identity = nullptr;
        std::shared_ptr<void> keep;  // the variable's storage; null for a plain tensor
        void* target = nullptr;
        bool rebind = false;  // a plain tensor: a restore gives it a new tensor of the stored extents
    };

    void insert(const std::string& name, entry e);

    // A variable's entry: one function per dtype, not per variable.
    template <class T>
    TYPEFLOW_NOINLINE void add_storage(std::string_view name, const dims& pattern,
                                       const std::shared_ptr<typeflow::detail::variable_state<T>>& st) {
        st->mirror.pull(st->value.data());  // the host value is the one saved and restored
        st->mirror.device_stale = true;
        insert(std::string(name), entry{dtype_of<T>, pattern, st.get(), st, &st->value, false});
    }

    // Every variable below a node's state: one walk over the states' child
    // slots (the kind of each slot told by its destroy function), compiled
    // once, not once per node type.
    void add_graph(const typeflow::detail::node_state* root);

    // Sources of every tensor, or of shard k's.
    std::vector<tensor_source> sources(std::optional<std::size_t> k) const;
    std::string joined_names() const;
    // Deletes the oldest checkpoints beyond max_to_keep (never the one of `keep_step`).
    void rotate(const std::string& dir, std::int64_t keep_step) const;
    // Temporary files of writers that died (".<basename>-*.tmp.<pid>", pid gone).
    void remove_stale_temporaries(const std::string& dir) const;

    saver_options opt_;
    std::map<std::string, entry> entries_;
};

}  // namespace typeflow::io

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/io/impl/saver.ipp>
#endif

#pragma once
// typeflow::dist::cluster_spec — who is in the cluster and which task this
// process is, read from TF_CONFIG-style JSON.

#include <typeflow/distributed/config.hpp>
#include <typeflow/distributed/error.hpp>
#include <typeflow/distributed/options.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace typeflow::dist {

/// The address of a task that reports its own when it joins (see cluster_spec).
inline constexpr std::string_view unknown_address = "*";

/// Role of a task. Ranks are numbered chief first, then workers, then ps.
enum class role { chief, worker, ps };

/// "chief", "worker", "ps".
std::string_view name_of(role r) noexcept;

/// One task of the cluster: its role and index within that role.
struct task_id {
    role type = role::worker;
    int index = 0;
    /// "worker:1"
    std::string name() const;
    friend bool operator==(const task_id&, const task_id&) = default;
};

/// A cluster spec, the JSON of TF_CONFIG:
///
///     {"cluster": {"chief": ["host:port"], "worker": ["host:port", ...], "ps": [...]},
///      "task": {"type": "worker", "index": 0},
///      "secret": "shared secret (optional; TYPEFLOW_SECRET overrides)",
///      "options": {"heartbeat_timeout_ms": 10000, "connect_timeout_ms": 60000,
///                  "handshake_timeout_ms": 5000, "op_timeout_ms": 600000,
///                  "max_frame_bytes": 67108864, "segment_bytes": 262144}}
///
/// With no chief, worker 0 is the chief (it hosts the rendezvous). Any task
/// but the chief may have the address "*" (unknown_address): it listens on a
/// free port of every interface and reports it when it joins the chief,
/// which passes every address on to all tasks (how from_mpi's tasks meet).
/// Malformed specs throw `error` naming the source and the offending field:
/// options outside their ranges (see transport_options) and two tasks on one
/// endpoint however spelled (see canonical_address) included.
struct cluster_spec {
    std::vector<std::string> chief;  ///< 0 or 1 address
    std::vector<std::string> worker; ///< addresses "host:port"
    std::vector<std::string> ps;     ///< addresses "host:port"
    task_id task;                    ///< this process
    std::string secret;              ///< shared secret, may be empty
    transport_options options;       ///< from "options", defaults otherwise

    /// Number of tasks (chief + workers + ps).
    int size() const noexcept;
    /// Rank of this process.
    int rank() const;
    /// Rank of a task; throws if the task is not in the cluster.
    int rank_of(task_id t) const;
    /// Task of a rank.
    task_id task_of(int rank) const;
    /// "host:port" of a rank.
    const std::string& address_of(int rank) const;
    /// The secret to use: TYPEFLOW_SECRET if set, otherwise `secret`.
    std::string effective_secret() const;

    /// Parses JSON; `origin` names the source in error messages.
    static cluster_spec parse(std::string_view json, std::string_view origin = "cluster spec");
    /// Reads and parses a file.
    static cluster_spec from_file(const std::string& path);
    /// Reads TYPEFLOW_CONFIG (JSON), or the file named by TYPEFLOW_CONFIG_FILE;
    /// without either, in a task started by Open MPI's mpirun
    /// (OMPI_COMM_WORLD_RANK set) the MPI environment (from_mpi), else in one
    /// started by Slurm's srun (SLURM_PROCID set) the Slurm environment
    /// (from_slurm).
    static cluster_spec from_env();
    /// The spec of a task started by Open MPI's mpirun, from the variables
    /// `env` returns (nullptr for unset ones): every task is a worker, rank
    /// OMPI_COMM_WORLD_RANK of OMPI_COMM_WORLD_SIZE; rank 0 listens on
    /// MASTER_ADDR:MASTER_PORT (PyTorch's names; pass them with mpirun -x),
    /// every other task on a free port that it reports when it joins there
    /// (address "*"). Throws `error` naming the variable for anything missing
    /// or malformed.
    static cluster_spec from_mpi(const std::function<const char*(const char*)>& env);
    /// The spec of a task started by Slurm's srun, from the variables `env`
    /// returns (nullptr for unset ones): every task is a worker, rank
    /// SLURM_PROCID of SLURM_NTASKS; the hosts are SLURM_STEP_NODELIST (or
    /// SLURM_JOB_NODELIST) with SLURM_STEP_TASKS_PER_NODE (or
    /// SLURM_TASKS_PER_NODE) tasks each, placed by SLURM_DISTRIBUTION (block,
    /// the default, or cyclic); the k-th task on a host listens on port
    /// TYPEFLOW_PORT + k (default 29500 + k). Throws `error` naming the
    /// variable for anything missing, malformed or inconsistent.
    static cluster_spec from_slurm(const std::function<const char*(const char*)>& env);
    /// Serialises back to JSON (without the secret).
    std::string to_json() const;
};

/// The hosts of a Slurm node list: "node[01-04,07],gpu3" is node01, node02,
/// node03, node04, node07, gpu3 (zero padding kept; several bracket groups in
/// one name expand to every combination). Throws `error` for malformed lists.
std::vector<std::string> expand_slurm_nodelist(std::string_view list);
/// The task counts of SLURM_TASKS_PER_NODE: "2(x3),1" is 2, 2, 2, 1.
std::vector<int> expand_slurm_tasks_per_node(std::string_view counts);
/// Splits "host:port" or "[v6]:port" (the port in decimal, leading zeros
/// allowed); throws `error` with `what` in the message.
std::pair<std::string, unsigned short> split_address(std::string_view address, std::string_view what);

/// The endpoint an address names, spelled one way, so that two spellings of
/// one endpoint compare equal: the port in plain decimal; a numeric IPv4 host
/// in dotted decimal (read as the resolver reads it: "127.1" and
/// "127.000.000.001" are 127.0.0.1); a numeric IPv6 host in its RFC 5952
/// form in brackets (an IPv4-mapped one as its IPv4 address); `localhost` as
/// the address the transport would listen on and connect to for it (the
/// resolver's first answer, as the transport takes it); any other name in
/// lower case without a trailing dot (names are not resolved).
/// "LocalHost:05000" -> "127.0.0.1:5000" where localhost resolves there first.
std::string canonical_address(std::string_view address, std::string_view what);

/// Throws `error` ("<origin>: transport_options.<field> is <value>, outside
/// the allowed range <min>..<max> <unit>") unless every option is within the
/// ranges listed at transport_options; also refuses segment_bytes above
/// max_frame_bytes. The transport's constructor calls it (options set in
/// code); cluster_spec::parse checks each JSON option against the same
/// ranges as it reads it ("<origin>: options.<key> is ...").
void check_options(const transport_options& options, std::string_view origin);

} // namespace typeflow::dist

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/distributed/impl/cluster_spec.ipp>
#endif

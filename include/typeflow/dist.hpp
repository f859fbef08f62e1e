#pragma once
// typeflow distributed runtime (opt-in; needs Boost.Asio, OpenSSL libcrypto, Cereal, RapidJSON).
#include <typeflow/distributed/cluster_spec.hpp>
#include <typeflow/distributed/collective.hpp>
#include <typeflow/distributed/error.hpp>
#include <typeflow/distributed/frame.hpp>
#include <typeflow/distributed/handshake.hpp>
#include <typeflow/distributed/log.hpp>
#include <typeflow/distributed/options.hpp>
#include <typeflow/distributed/reduce_op.hpp>
#include <typeflow/distributed/ring_collective.hpp>
#include <typeflow/distributed/staged_collective.hpp>
#include <typeflow/distributed/transport.hpp>

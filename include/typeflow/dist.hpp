#pragma once
// typeflow distributed runtime (opt-in; needs Boost.Asio, OpenSSL libcrypto, Cereal, RapidJSON).
#include <typeflow/dist/cluster_spec.hpp>
#include <typeflow/dist/collective.hpp>
#include <typeflow/dist/dtype.hpp>
#include <typeflow/dist/error.hpp>
#include <typeflow/dist/frame.hpp>
#include <typeflow/dist/handshake.hpp>
#include <typeflow/dist/log.hpp>
#include <typeflow/dist/options.hpp>
#include <typeflow/dist/ring_collective.hpp>
#include <typeflow/dist/transport.hpp>

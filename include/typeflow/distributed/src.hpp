// typeflow/distributed/src.hpp — the distributed layer's plain code, for
// separate compilation.
//
// Define TYPEFLOW_SEPARATE_COMPILATION in every translation unit of the
// program (CMake: target_compile_definitions(app PRIVATE
// TYPEFLOW_SEPARATE_COMPILATION)) and include this header in exactly one
// source file; a program that also runs sessions includes <typeflow/src.hpp>
// there too. The other translation units then compile the distributed
// headers without Asio, OpenSSL, Cereal or RapidJSON. Without the macro the
// layer is header-only and this header is not needed.
#pragma once
#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#error "typeflow/distributed/src.hpp: define TYPEFLOW_SEPARATE_COMPILATION in every translation unit (see typeflow/distributed/config.hpp)"
#endif

// Each impl/*.ipp includes its own header.
#include <typeflow/distributed/impl/cluster_spec.ipp>
#include <typeflow/distributed/impl/frame.ipp>
#include <typeflow/distributed/impl/handshake.ipp>
#include <typeflow/distributed/impl/log.ipp>
#include <typeflow/distributed/impl/ring_collective.ipp>
#include <typeflow/distributed/impl/transport.ipp>

// typeflow/io/src.hpp — the io layer's plain code (checkpoints, saver,
// event files, summaries), for separate compilation.
//
// Define TYPEFLOW_SEPARATE_COMPILATION in every translation unit of the
// program (CMake: target_compile_definitions(app PRIVATE
// TYPEFLOW_SEPARATE_COMPILATION)) and include this header in exactly one
// source file; a program that also runs sessions includes <typeflow/src.hpp>
// there too. The other translation units then compile the io headers without
// Cereal, RapidJSON, <fstream> or <filesystem>. Without the macro the io
// layer is header-only and this header is not needed.
#pragma once
#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#error "typeflow/io/src.hpp: define TYPEFLOW_SEPARATE_COMPILATION in every translation unit (see typeflow/core/config.hpp)"
#endif

// Each impl/*.ipp includes its own header.
#include <typeflow/io/impl/checkpoint.ipp>
#include <typeflow/io/impl/crc32c.ipp>
#include <typeflow/io/impl/events.ipp>
#include <typeflow/io/impl/file.ipp>
#include <typeflow/io/impl/saver.ipp>
#include <typeflow/io/impl/summary.ipp>

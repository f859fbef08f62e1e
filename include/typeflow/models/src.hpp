// typeflow/models/src.hpp — the models layer's plain code (the callbacks),
// for separate compilation.
//
// Define TYPEFLOW_SEPARATE_COMPILATION in every translation unit of the
// program and include, in exactly one source file, this header together with
// <typeflow/src.hpp> (the runtime) and <typeflow/io/src.hpp> (checkpoints and
// summaries, which models save through). Without the macro typeflow is
// header-only and this header is not needed.
#pragma once
#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#error "typeflow/models/src.hpp: define TYPEFLOW_SEPARATE_COMPILATION in every translation unit (see typeflow/core/config.hpp)"
#endif

// Each impl/*.ipp includes its own header.
#include <typeflow/models/impl/callbacks.ipp>
#include <typeflow/models/impl/model.ipp>
#include <typeflow/models/impl/sequential.ipp>

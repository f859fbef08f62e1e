// A core header that includes the runtime: check_layers.cmake must reject it
// (the layering test's negative control).
#pragma once
#include <typeflow/core/shape.hpp>
#include <typeflow/runtime/session.hpp>

# vcpkg overlay port for typeflow, built from a local source tree:
#   vcpkg install "typeflow[io,distributed]" --overlay-ports=<repo>/ports
# The source tree is TYPEFLOW_SOURCE_DIR when that is set (in a custom
# triplet, or in the environment with TYPEFLOW_SOURCE_DIR listed in
# VCPKG_KEEP_ENV_VARS), else the repository this port lives in
# (<repo>/ports/typeflow/../..). scripts/vcpkg_check.sh runs the same
# configure / install / fixup steps with plain CMake (it reads the OPTIONS
# below from this file).

# Header-only: nothing to build, so no debug configuration.
set(VCPKG_BUILD_TYPE release)

if(DEFINED TYPEFLOW_SOURCE_DIR)
  set(SOURCE_PATH "${TYPEFLOW_SOURCE_DIR}")
elseif(DEFINED ENV{TYPEFLOW_SOURCE_DIR})
  set(SOURCE_PATH "$ENV{TYPEFLOW_SOURCE_DIR}")
else()
  get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
endif()
if(NOT EXISTS "${SOURCE_PATH}/include/typeflow/typeflow.hpp")
  message(FATAL_ERROR "typeflow: no typeflow source tree at '${SOURCE_PATH}' (set TYPEFLOW_SOURCE_DIR)")
endif()

# Features only choose dependencies: the package always carries every
# component's CMake targets, and find_package(typeflow COMPONENTS ...) checks
# the component's dependencies when it is asked for.
vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    -DTYPEFLOW_BUILD_TESTS=OFF
    -DTYPEFLOW_BUILD_EXAMPLES=OFF
    -DTYPEFLOW_BUILD_BENCHMARKS=OFF
    -DTYPEFLOW_BUILD_DIST=OFF
    -DTYPEFLOW_INSTALL=ON
    -DTYPEFLOW_USE_ZLIB=ON
    -DTYPEFLOW_INSTALL_CMAKEDIR=share/typeflow
)
vcpkg_cmake_install()
# Installed straight into share/typeflow (TYPEFLOW_INSTALL_CMAKEDIR), so the
# fixup moves nothing; it checks the relative prefix computations.
vcpkg_cmake_config_fixup(CONFIG_PATH share/typeflow)

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug" "${CURRENT_PACKAGES_DIR}/lib")

file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
if(EXISTS "${SOURCE_PATH}/LICENSE")
  vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
else()
  # The repository has no LICENSE file yet; vcpkg requires a copyright file.
  file(WRITE "${CURRENT_PACKAGES_DIR}/share/${PORT}/copyright"
       "typeflow: no license file in the source tree; see the project's README.\n")
endif()

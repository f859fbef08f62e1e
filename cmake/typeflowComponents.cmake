# The optional components of typeflow and how to find their dependencies.
#
# Used by the build tree (CMakeLists.txt) and installed next to
# typeflowConfig.cmake, which calls it for each component a consumer asks
# for: find_package(typeflow REQUIRED COMPONENTS io distributed cuda).
#
#   typeflow::io           Cereal and RapidJSON headers (typeflow/io.hpp: checkpoints, summaries)
#   typeflow::distributed  typeflow::io + Boost (>= 1.81) headers for Asio, OpenSSL libcrypto,
#                          Threads (typeflow/dist.hpp)
#   typeflow::cuda         CUDAToolkit (cudart, cublas, cublasLt), cuDNN and NCCL
#
#   _typeflow_find_component(<component> <found-var> <why-var>)
#
# looks up the component's dependencies (QUIET: never fails by itself) and
# defines the imported helper targets its exported target links:
#   typeflow_deps::cereal, typeflow_deps::rapidjson, typeflow_deps::cudnn, typeflow_deps::nccl
# (Boost::headers, OpenSSL::Crypto, Threads::Threads and CUDA::* come from
# CMake's and Boost's own packages). <found-var> is TRUE when everything was
# found; otherwise <why-var> names each missing dependency and the Debian
# package that provides it.
#
# Not include_guard()ed on purpose: imported targets are visible only in the
# directory that created them, so each find_package(typeflow ...) call
# re-runs this file (target creation is guarded by if(NOT TARGET ...)).

set(_typeflow_component_names io distributed cuda)

# An imported target for a header-only dependency: linking its own target
# when its package has one (link), else carrying its include directory (inc).
function(_typeflow_dep_target target link inc)
  add_library(${target} INTERFACE IMPORTED)
  if(link)
    set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${link}")
  else()
    set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${inc}")
  endif()
endfunction()

# Cereal (header-only). Debian's libcereal-dev and vcpkg/Conan ship a CMake
# package with cereal::cereal (older Cereal: a target named `cereal`);
# otherwise look for the headers.
function(_typeflow_find_cereal found_var why_var)
  if(NOT TARGET typeflow_deps::cereal)
    find_package(cereal CONFIG QUIET)
    if(TARGET cereal::cereal)
      set(_link cereal::cereal)
    elseif(TARGET cereal)
      set(_link cereal)
    else()
      find_path(TYPEFLOW_CEREAL_INCLUDE_DIR NAMES cereal/cereal.hpp
                DOC "Directory holding cereal/cereal.hpp (Debian: libcereal-dev)")
      mark_as_advanced(TYPEFLOW_CEREAL_INCLUDE_DIR)
      if(NOT EXISTS "${TYPEFLOW_CEREAL_INCLUDE_DIR}/cereal/cereal.hpp")
        set(${found_var} FALSE PARENT_SCOPE)
        set(${why_var} "Cereal (cereal/cereal.hpp, Debian package libcereal-dev, or set cereal_DIR / TYPEFLOW_CEREAL_INCLUDE_DIR)" PARENT_SCOPE)
        return()
      endif()
    endif()
    _typeflow_dep_target(typeflow_deps::cereal "${_link}" "${TYPEFLOW_CEREAL_INCLUDE_DIR}")
  endif()
  set(${found_var} TRUE PARENT_SCOPE)
endfunction()

# RapidJSON (header-only): also what Cereal's JSON archive includes on Debian
# (libcereal-dev drops Cereal's bundled copy). Debian's RapidJSONConfig.cmake
# sets RAPIDJSON_INCLUDE_DIRS, vcpkg's and Conan's define a `rapidjson` target.
function(_typeflow_find_rapidjson found_var why_var)
  if(NOT TARGET typeflow_deps::rapidjson)
    set(_link "")
    set(_inc "")
    find_package(RapidJSON CONFIG QUIET)
    if(TARGET rapidjson)
      set(_link rapidjson)
    elseif(TARGET RapidJSON::RapidJSON)
      set(_link RapidJSON::RapidJSON)
    elseif(TARGET RapidJSON)
      set(_link RapidJSON)
    else()
      foreach(_v RapidJSON_INCLUDE_DIRS RAPIDJSON_INCLUDE_DIRS RapidJSON_INCLUDE_DIR RAPIDJSON_INCLUDE_DIR)
        if(${_v} AND EXISTS "${${_v}}/rapidjson/document.h")
          set(_inc "${${_v}}")
          break()
        endif()
      endforeach()
      if(NOT _inc)
        find_path(TYPEFLOW_RAPIDJSON_INCLUDE_DIR NAMES rapidjson/document.h
                  DOC "Directory holding rapidjson/document.h (Debian: rapidjson-dev)")
        mark_as_advanced(TYPEFLOW_RAPIDJSON_INCLUDE_DIR)
        set(_inc "${TYPEFLOW_RAPIDJSON_INCLUDE_DIR}")
      endif()
      if(NOT EXISTS "${_inc}/rapidjson/document.h")
        set(${found_var} FALSE PARENT_SCOPE)
        set(${why_var} "RapidJSON (rapidjson/document.h, Debian package rapidjson-dev, or set RapidJSON_DIR / TYPEFLOW_RAPIDJSON_INCLUDE_DIR)" PARENT_SCOPE)
        return()
      endif()
    endif()
    _typeflow_dep_target(typeflow_deps::rapidjson "${_link}" "${_inc}")
  endif()
  set(${found_var} TRUE PARENT_SCOPE)
endfunction()

# A library and its header, looked for in the CUDA toolkit's directories and
# under /usr/local/cuda (where NVIDIA's installers put cuDNN and NCCL).
function(_typeflow_find_cuda_lib target lib header found_var)
  if(NOT TARGET ${target})
    string(TOUPPER "${lib}" _up)
    set(_hints "${CUDAToolkit_LIBRARY_ROOT}" "${CUDAToolkit_TARGET_DIR}" /usr/local/cuda)
    find_library(TYPEFLOW_${_up}_LIBRARY NAMES ${lib}
                 HINTS ${CUDAToolkit_LIBRARY_DIR} ${_hints} PATH_SUFFIXES lib64 lib lib/x64)
    find_path(TYPEFLOW_${_up}_INCLUDE_DIR NAMES ${header}
              HINTS ${CUDAToolkit_INCLUDE_DIRS} ${_hints} PATH_SUFFIXES include)
    mark_as_advanced(TYPEFLOW_${_up}_LIBRARY TYPEFLOW_${_up}_INCLUDE_DIR)
    if(NOT EXISTS "${TYPEFLOW_${_up}_LIBRARY}" OR NOT EXISTS "${TYPEFLOW_${_up}_INCLUDE_DIR}/${header}")
      set(${found_var} FALSE PARENT_SCOPE)
      return()
    endif()
    add_library(${target} UNKNOWN IMPORTED)
    set_target_properties(${target} PROPERTIES
      IMPORTED_LOCATION "${TYPEFLOW_${_up}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${TYPEFLOW_${_up}_INCLUDE_DIR}")
  endif()
  set(${found_var} TRUE PARENT_SCOPE)
endfunction()

function(_typeflow_find_component component found_var why_var)
  set(_missing "")
  if(component STREQUAL "io" OR component STREQUAL "distributed")
    _typeflow_find_cereal(_ok _why)
    if(NOT _ok)
      string(APPEND _missing "\n  - ${_why}")
    endif()
    _typeflow_find_rapidjson(_ok _why)
    if(NOT _ok)
      string(APPEND _missing "\n  - ${_why}")
    endif()
  endif()
  if(component STREQUAL "distributed")
    # No version range: Boost's own version file accepts any 1.x >= 1.81.
    find_package(Boost 1.81 CONFIG QUIET)
    if(NOT TARGET Boost::headers)
      string(APPEND _missing "\n  - Boost >= 1.81 headers for Asio (Boost::headers, Debian package libboost-dev >= 1.81, on Debian 12 libboost1.81-dev, or set Boost_DIR)")
    endif()
    find_package(OpenSSL QUIET COMPONENTS Crypto)
    if(NOT TARGET OpenSSL::Crypto)
      string(APPEND _missing "\n  - OpenSSL libcrypto (OpenSSL::Crypto, Debian package libssl-dev, or set OPENSSL_ROOT_DIR)")
    endif()
    find_package(Threads QUIET)
    if(NOT TARGET Threads::Threads)
      string(APPEND _missing "\n  - Threads (a pthread library, Debian package libc6-dev)")
    endif()
  elseif(component STREQUAL "cuda")
    find_package(CUDAToolkit QUIET)
    if(NOT CUDAToolkit_FOUND)
      string(APPEND _missing "\n  - the CUDA toolkit (CUDAToolkit: cudart, cublas, cublasLt, Debian package nvidia-cuda-toolkit, or NVIDIA's installer in /usr/local/cuda, or set CUDAToolkit_ROOT)")
    else()
      foreach(_t cudart cublas cublasLt)
        if(NOT TARGET CUDA::${_t})
          string(APPEND _missing "\n  - CUDA::${_t} (not in the CUDA toolkit at '${CUDAToolkit_LIBRARY_DIR}')")
        endif()
      endforeach()
    endif()
    _typeflow_find_cuda_lib(typeflow_deps::cudnn cudnn cudnn.h _ok)
    if(NOT _ok)
      string(APPEND _missing "\n  - cuDNN (libcudnn and cudnn.h, Debian package nvidia-cudnn, or NVIDIA's archive in /usr/local/cuda, or set TYPEFLOW_CUDNN_LIBRARY / TYPEFLOW_CUDNN_INCLUDE_DIR)")
    endif()
    _typeflow_find_cuda_lib(typeflow_deps::nccl nccl nccl.h _ok)
    if(NOT _ok)
      string(APPEND _missing "\n  - NCCL (libnccl and nccl.h, Debian package libnccl-dev, or NVIDIA's archive in /usr/local/cuda, or set TYPEFLOW_NCCL_LIBRARY / TYPEFLOW_NCCL_INCLUDE_DIR)")
    endif()
  elseif(NOT component STREQUAL "io")
    set(${found_var} FALSE PARENT_SCOPE)
    string(REPLACE ";" ", " _known "${_typeflow_component_names}")
    set(${why_var} "typeflow has no component '${component}' (its components: ${_known})" PARENT_SCOPE)
    return()
  endif()
  if(_missing)
    set(${found_var} FALSE PARENT_SCOPE)
    set(${why_var} "typeflow component '${component}' needs, and could not find:${_missing}" PARENT_SCOPE)
  else()
    set(${found_var} TRUE PARENT_SCOPE)
    set(${why_var} "" PARENT_SCOPE)
  endif()
endfunction()

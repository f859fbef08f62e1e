# libFuzzer targets for the readers of untrusted files and text (clang only:
# GCC has no libFuzzer). Each is built with AddressSanitizer and
# UndefinedBehaviorSanitizer and registered as CTest test fuzz.<name>, which
# fuzzes for TYPEFLOW_FUZZ_SECONDS from its checked-in seed corpus
# (tests/fuzz/corpus_<name>); a crash, a sanitizer report, a leak or a broken
# property (__builtin_trap) fails it and leaves the input as crash-* in the
# build directory's fuzz/ folder. Without clang the tests are not registered
# (the distributed layer's frame fuzzer is cmake/dist.cmake's dist.fuzz.frame).
find_program(TYPEFLOW_FUZZ_CLANGXX NAMES clang++ clang++-14)
set(TYPEFLOW_FUZZ_SECONDS 20 CACHE STRING "Seconds each fuzz.<name> test fuzzes")
if(NOT TYPEFLOW_FUZZ_CLANGXX)
  message(STATUS "typeflow: clang++ not found; the fuzz.* tests are not built (apt-get install clang)")
  return()
endif()

set(_tf_fuzz_dir ${PROJECT_SOURCE_DIR}/tests/fuzz)
set(_tf_fuzz_out ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
file(MAKE_DIRECTORY ${_tf_fuzz_out})
file(GLOB_RECURSE _tf_fuzz_headers ${PROJECT_SOURCE_DIR}/include/typeflow/*.hpp ${PROJECT_SOURCE_DIR}/include/typeflow/*.ipp)
# RapidJSON 1.1.0's known undefined behaviour is suppressed at run time (see
# tests/fuzz/ubsan.supp), so that check alone must be recoverable.
set(_tf_fuzz_flags -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                   -fsanitize-recover=pointer-overflow)

function(typeflow_fuzz_target name)
  set(_bin ${_tf_fuzz_out}/fuzz_${name})
  add_custom_command(OUTPUT ${_bin}
    COMMAND ${TYPEFLOW_FUZZ_CLANGXX} ${_tf_fuzz_flags} -I${PROJECT_SOURCE_DIR}/include
            ${_tf_fuzz_dir}/fuzz_${name}.cpp -o ${_bin}
    DEPENDS ${_tf_fuzz_dir}/fuzz_${name}.cpp ${_tf_fuzz_dir}/fuzz_util.hpp ${_tf_fuzz_headers}
    COMMENT "Building libFuzzer target fuzz_${name} with clang")
  add_custom_target(fuzz_${name} ALL DEPENDS ${_bin})
  add_test(NAME fuzz.${name}
    COMMAND ${CMAKE_COMMAND} -E env
            ASAN_OPTIONS=detect_leaks=1
            UBSAN_OPTIONS=suppressions=${_tf_fuzz_dir}/ubsan.supp:halt_on_error=1:print_stacktrace=1
            sh -c "rm -rf new-${name} && mkdir -p new-${name} && exec ${_bin} -seed=1 -rss_limit_mb=2048 -max_total_time=${TYPEFLOW_FUZZ_SECONDS} -print_final_stats=1 new-${name} ${_tf_fuzz_dir}/corpus_${name}"
    WORKING_DIRECTORY ${_tf_fuzz_out})
  set_tests_properties(fuzz.${name} PROPERTIES TIMEOUT 300 LABELS fuzz)
endfunction()

typeflow_fuzz_target(checkpoint)    # io::checkpoint_reader: binary, JSON, sharded index
typeflow_fuzz_target(events)        # io::read_events: TensorBoard event files
typeflow_fuzz_target(cluster_spec)  # dist::cluster_spec::parse: TF_CONFIG JSON

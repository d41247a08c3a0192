# Helpers shared by every component's CMakeLists.

# squeeze_isa_sources(<isa> <files...>): compile these translation units for one ISA.
# ISA variants live in their own files; the dispatcher picks one at
# start-up from CPU feature detection, so the rest of the build stays baseline x86-64.
function(squeeze_isa_sources isa)
  if(isa STREQUAL "avx2")
    set(flags "-mavx2;-mfma;-mf16c;-mbmi2")
  elseif(isa STREQUAL "avx512")
    set(flags "-mavx2;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mfma;-mf16c;-mbmi2")
  else()
    message(FATAL_ERROR "unknown ISA ${isa}")
  endif()
  if(SQUEEZE_FUZZ)
    # Fuzz builds compile these kernels plain: no parser reaches them, and clang 14 spends
    # tens of minutes instrumenting their intrinsics (dot_q8_avx2.cpp: over 14 min).
    list(APPEND flags -fno-sanitize=all)
  endif()
  # Unity batches take their target's flags: ISA translation units compile alone.
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "${flags}" SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

# squeeze_test(<name> <sources...> LIBS <libs...> [LABELS <labels...>]): one GoogleTest
# executable, tests discovered by CTest. LABELS select stages: `tsan` = also run under
# ThreadSanitizer by scripts/test (ctest -L tsan in build/tsan); `isa` = the suites that
# exercise the kernels and the forward pass, run again on each lower kernel table
# (SQUEEZE_ISA) by scripts/test. One label each: gtest_discover_tests cannot pass a list
# through, and `ctest -L` matches labels as regular expressions, so a suite in both stages
# carries `tsan_isa`.
function(squeeze_test name)
  cmake_parse_arguments(T "" "" "LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_UNPARSED_ARGUMENTS})
  # Test sources compile in batches of 6 (one translation unit each): gtest and the JSON
  # headers are parsed and instantiated once per batch, not once per file — most of the
  # tests' compile time. Files whose anonymous-namespace helpers share names with a
  # neighbour's are marked SKIP_UNITY_BUILD_INCLUSION in their CMakeLists.
  set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 6)
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)  # common/ test helpers
  set(props TIMEOUT 600)
  if(T_LABELS)
    list(APPEND props LABELS "${T_LABELS}")
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${props})
endfunction()

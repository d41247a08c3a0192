# SQUEEZE_FUZZ: libFuzzer targets (fuzz/) over every parser of untrusted input.
# Included before src/ so that every project library is compiled with coverage
# instrumentation (-fsanitize=fuzzer-no-link) on top of the Sanitize build type's
# ASan + UBSan; only the fuzz/ executables link the libFuzzer driver (-fsanitize=fuzzer).
if(NOT SQUEEZE_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "SQUEEZE_FUZZ needs clang (libFuzzer): configure with CC=clang CXX=clang++")
endif()
if(NOT CMAKE_BUILD_TYPE STREQUAL "Sanitize")
  # The sanitizers come from the Sanitize build type; a fuzzer without them finds little.
  message(FATAL_ERROR "SQUEEZE_FUZZ needs -DCMAKE_BUILD_TYPE=Sanitize (got '${CMAKE_BUILD_TYPE}')")
endif()
add_compile_options(-fsanitize=fuzzer-no-link)

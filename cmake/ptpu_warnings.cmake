# Warnings for ptpu's own tests, examples and benchmarks (never imposed on users of the library).
add_library(ptpu_warnings INTERFACE)
target_compile_options(ptpu_warnings INTERFACE -Wall -Wextra -Wpedantic -Werror
    $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)

# Runs one ko case of a compile-fail file and judges the compiler's output (ptpu_compile_fail in
# ptpu_testing.cmake adds one test per `//! ko` line running this script).
#
#   cmake -DCXX=<compiler> -DFLAGS=<;-list> -DSOURCE=<file.cpp> -DKO=<n> -DRULE=<id>
#         [-DEXPECT=<regex>] [-DFIRST_LINE=ON] -P compile_fail_case.cmake
#
# The case passes when the compilation fails, the output names `ptpu[RULE]`, and it holds exactly
# one `error:` (one mistake, one message). With FIRST_LINE=ON that first `error:` line
# must itself name `ptpu[RULE]`, so the reader's eye lands on the rule rather than on "no matching
# function" or "constraints not satisfied"; EXPECT, when given, is a CMake regex the same line
# must match (e.g. the operand's name and the fix). Prints the compiler's output, then one line
# saying what failed.
cmake_minimum_required(VERSION 3.25)

foreach(v CXX SOURCE KO RULE)
    if(NOT DEFINED ${v})
        message(FATAL_ERROR "compile_fail_case: pass -D${v}=...")
    endif()
endforeach()

execute_process(COMMAND ${CXX} ${FLAGS} -DPTPU_KO=${KO} ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")

set(where "ko ${KO} [${RULE}] of ${SOURCE}")
if(rc EQUAL 0)
    message(FATAL_ERROR "compile_fail_case: ${where} compiled; it must fail")
endif()
string(FIND "${out}" "ptpu[${RULE}]" at)
if(at EQUAL -1)
    message(FATAL_ERROR "compile_fail_case: ${where}: the output does not name ptpu[${RULE}]")
endif()

# The first line holding "error:", and how many times "error:" occurs (regexes on the whole text:
# compiler output is no CMake list, its brackets and semicolons would split it wrongly).
string(REGEX MATCH "[^\n]*error:[^\n]*" first "${out}")
string(REGEX MATCHALL "error:" all "${out}")
list(LENGTH all errors)
if(NOT errors EQUAL 1)
    message(FATAL_ERROR "compile_fail_case: ${where}: `error:` occurs ${errors} times; one mistake must give one error")
endif()
if(FIRST_LINE)
    string(FIND "${first}" "ptpu[${RULE}]" at)
    if(at EQUAL -1)
        message(FATAL_ERROR "compile_fail_case: ${where}: the first `error:` line does not name ptpu[${RULE}]:\n${first}")
    endif()
endif()
if(DEFINED EXPECT AND NOT EXPECT STREQUAL "")
    if(NOT first MATCHES "${EXPECT}")
        message(FATAL_ERROR "compile_fail_case: ${where}: the first `error:` line does not match `${EXPECT}`:\n${first}")
    endif()
endif()
message("compile_fail_case: ${where}: ok")

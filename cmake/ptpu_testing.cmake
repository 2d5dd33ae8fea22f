# Test harness helpers: compile-fail cases and per-header self-containment.

# Include directories and flags a compile-fail case needs to see the library as users do: with
# PTPU_SEPARATE_RUNTIME, as linking ptpu::runtime sets it (the cases are checked, never linked, so
# the compiled part's definitions are not read; they hold no template a case could instantiate).
function(_ptpu_cf_flags out)
    set(flags -std=c++20 -fsyntax-only -DPTPU_SEPARATE_RUNTIME -I${PROJECT_SOURCE_DIR}/include)
    foreach(dep Eigen3::Eigen Boost::headers)
        get_target_property(dirs ${dep} INTERFACE_INCLUDE_DIRECTORIES)
        if(NOT dirs)  # e.g. Boost::headers in /usr/include
            continue()
        endif()
        foreach(d IN LISTS dirs)
            # Never re-add the compiler's own system dirs: it breaks #include_next.
            if(NOT d IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES AND NOT d STREQUAL "/usr/include")
                list(APPEND flags -isystem ${d})
            endif()
        endforeach()
    endforeach()
    set(${out} ${flags} PARENT_SCOPE)
endfunction()

# ptpu_compile_fail(<file>)
# The file compiles cleanly as it is (the "ok" twin, a test that must pass) and declares its
# mistakes in lines `//! ko <n> <rule id>`: compiled with -DPTPU_KO=<n> it must fail with
# `ptpu[<rule id>]` in the compiler output. The match is on the rule id, never on compiler prose,
# and an ok twin proves the file is otherwise valid, so a case cannot pass by breaking elsewhere.
# A ko variant must also give exactly one error (one mistake, one message), and with g++ (the
# suite's compiler) the first line holding `error:` must itself name `ptpu[<rule id>]`: what the
# reader sees first is the rule, not "no matching function" or "constraints not satisfied".
# A ko line may end with a regex, `//! ko <n> <rule id> <regex>` (CMake syntax, no semicolons,
# e.g. `//! ko 3 S4 weights.*keep`): with g++ that first `error:` line must match it too, which
# pins what the message names (the operand, the dim) and its fix. The judging is
# cmake/compile_fail_case.cmake.
#
# With g++, every case reads <ptpu/ptpu.hpp> from one precompiled header (ptpu_compile_fail_pch,
# built with the cases' own flags), so the ~170 cases stop re-parsing the library each. With it
# and PTPU_SEPARATE_RUNTIME a case takes about 1.2 s of CPU instead of 7.8 s (header-only, no
# precompiled header; `tests/compile_fail/ops_shapes.cpp` ko 17). The diagnostics are the same,
# since the header is the same; if the precompiled file is missing or stale, g++ reads the header
# itself.
function(ptpu_compile_fail_pch)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR TARGET ptpu_compile_fail_pch)
        return()
    endif()
    _ptpu_cf_flags(flags)
    list(REMOVE_ITEM flags -fsyntax-only)  # a header compiled with it writes no PCH
    set(dir ${PROJECT_BINARY_DIR}/compile_fail_pch)
    file(CONFIGURE OUTPUT ${dir}/ptpu_cf.hpp CONTENT "#include <ptpu/ptpu.hpp>\n")
    file(GLOB_RECURSE headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/ptpu/*.hpp)
    add_custom_command(OUTPUT ${dir}/ptpu_cf.hpp.gch
        COMMAND ${CMAKE_CXX_COMPILER} ${flags} -x c++-header ${dir}/ptpu_cf.hpp -o ${dir}/ptpu_cf.hpp.gch
        DEPENDS ${headers} ${dir}/ptpu_cf.hpp
        COMMENT "Precompiling <ptpu/ptpu.hpp> for the compile-fail cases" VERBATIM)
    add_custom_target(ptpu_compile_fail_pch ALL DEPENDS ${dir}/ptpu_cf.hpp.gch)
endfunction()

function(ptpu_compile_fail file)
    get_filename_component(name ${file} NAME_WE)
    _ptpu_cf_flags(flags)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        ptpu_compile_fail_pch()
        list(APPEND flags -include ${PROJECT_BINARY_DIR}/compile_fail_pch/ptpu_cf.hpp)
    endif()
    add_test(NAME compile_fail.${name}.ok
             COMMAND ${CMAKE_CXX_COMPILER} ${flags} -Wall -Wextra -Werror ${file})
    set_tests_properties(compile_fail.${name}.ok PROPERTIES LABELS compile_fail)
    file(STRINGS ${file} kos REGEX "^//! ko [0-9]+ [A-Za-z0-9]+")
    if(NOT kos)
        message(FATAL_ERROR "${file}: no `//! ko <n> <rule>` line")
    endif()
    set(first_line OFF)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        set(first_line ON)
    endif()
    foreach(line IN LISTS kos)
        string(REGEX MATCH "^//! ko ([0-9]+) ([A-Za-z0-9]+)( +(.*))?$" _ "${line}")
        set(n ${CMAKE_MATCH_1})
        set(rule ${CMAKE_MATCH_2})
        set(expect "")
        if(first_line)
            string(STRIP "${CMAKE_MATCH_4}" expect)
        endif()
        add_test(NAME compile_fail.${name}.ko${n}.${rule}
                 COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} "-DFLAGS=${flags}" -DSOURCE=${file}
                         -DKO=${n} -DRULE=${rule} "-DEXPECT=${expect}" -DFIRST_LINE=${first_line}
                         -P ${PROJECT_SOURCE_DIR}/cmake/compile_fail_case.cmake)
        set_tests_properties(compile_fail.${name}.ko${n}.${rule} PROPERTIES LABELS compile_fail)
    endforeach()
endfunction()

# One translation unit per public header: each must compile on its own (label static).
function(ptpu_header_self_containment target)
    file(GLOB_RECURSE headers RELATIVE ${PROJECT_SOURCE_DIR}/include CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/include/ptpu/*.hpp)
    set(sources)
    foreach(h IN LISTS headers)
        string(MAKE_C_IDENTIFIER ${h} id)
        set(src ${CMAKE_CURRENT_BINARY_DIR}/self_contained/${id}.cpp)
        file(CONFIGURE OUTPUT ${src} CONTENT "#include <${h}>\n#include <${h}>  // include guard\n")
        list(APPEND sources ${src})
    endforeach()
    add_library(${target} OBJECT ${sources})
    # ptpu::sweep: the sweep/ headers need Hana (the others do not: cmake/layers.txt).
    target_link_libraries(${target} PRIVATE ptpu::sweep ptpu_warnings)
    # Whether a header compiles alone does not depend on optimization (the test binary's build
    # sees the optimizer's warnings): -O0 saves about a sixth of the time.
    if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
        target_compile_options(${target} PRIVATE -O0)
    endif()
endfunction()

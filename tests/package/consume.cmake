# Script run by ctest (label package): builds and runs a project outside ptpu's tree that gets
# ptpu one way, with the CMake or shell code docs/using.md shows (the files of
# tests/package/<way>/, which package.using_snippets checks against the doc).
#
#   cmake -DWAY=<way> -DPTPU_SOURCE_DIR=... -DPTPU_BINARY_DIR=... -DPACKAGE_DIR=... -DWORK_DIR=...
#         -DCXX_COMPILER=... -DCXX_FLAGS=... -DBUILD_TYPE=... -DCXX_FLAGS_CONFIG=...
#         [-DGIT_EXECUTABLE=...] -P consume.cmake
#
# WAY is one of
#   find_package      install ptpu into a fresh prefix; find_package(ptpu) in an environment where
#                     Boost is not found; then COMPONENTS sweep, which must fail
#                     clearly there and work where it is found, and fail clearly against an
#                     installation configured with PTPU_SWEEP=OFF
#   add_subdirectory  ptpu's source tree as ./ptpu, Boost not found (PTPU_SWEEP=AUTO)
#   fetchcontent      FetchContent from a git repository holding the source tree as it is now
#                     (uncommitted changes included), asking for the sweep: must fail clearly
#                     where Boost is not found, and work where it is
#   without_cmake     the compiler commands alone, with PTPU_SEPARATE_RUNTIME
# A kernel runs in each. Builds use one job: ctest runs these tests side by side.
cmake_minimum_required(VERSION 3.25)  # script mode: the policies of 3.25 (IN_LIST, ...)
foreach(var WAY PTPU_SOURCE_DIR PACKAGE_DIR WORK_DIR)
    if(NOT ${var})
        message(FATAL_ERROR "consume.cmake: ${var} is not set")
    endif()
endforeach()
if(NOT BUILD_TYPE)
    set(BUILD_TYPE Release)
endif()
set(config_flags "")
if(NOT CXX_FLAGS_CONFIG STREQUAL "")  # the suite's CMAKE_CXX_FLAGS_<BUILD_TYPE>
    string(TOUPPER "${BUILD_TYPE}" build_type_upper)
    set(config_flags "-DCMAKE_CXX_FLAGS_${build_type_upper}=${CXX_FLAGS_CONFIG}")
endif()
set(without_sweep_deps -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON)
set(sweep_missing_message "ptpu::sweep needs Boost\\.Hana")

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# A consumer project in ${WORK_DIR}/<name>: the snippet files of tests/package/<snippet>/, the
# program `program` as main.cpp, and, with LINK_PTPU, ptpu's source tree as ./ptpu (a link).
function(make_consumer name snippet program)
    cmake_parse_arguments(PARSE_ARGV 3 arg "LINK_PTPU" "" "")
    set(dir ${WORK_DIR}/${name})
    file(COPY ${PACKAGE_DIR}/${snippet}/ DESTINATION ${dir})
    file(COPY_FILE ${PACKAGE_DIR}/${program} ${dir}/main.cpp)
    if(arg_LINK_PTPU)
        file(CREATE_LINK ${PTPU_SOURCE_DIR} ${dir}/ptpu SYMBOLIC)
    endif()
endfunction()

# Configures consumer `name` in ${WORK_DIR}/<build> with the suite's compiler and flags (an
# installed ptpu::runtime was built with them) and extra arguments; its output in `out_var`.
# With EXPECT_FAILURE <regex>, configuring must fail and print regex.
function(configure name build out_var)
    cmake_parse_arguments(PARSE_ARGV 3 arg "" "EXPECT_FAILURE" "")
    execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/${name} -B ${WORK_DIR}/${build} -G Ninja
                            -DCMAKE_CXX_COMPILER=${CXX_COMPILER} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
                            ${config_flags} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} ${arg_UNPARSED_ARGUMENTS}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    message("${out}")
    if(arg_EXPECT_FAILURE)
        if(rc EQUAL 0)
            message(FATAL_ERROR "${build}: configuring succeeded; it should have failed with \"${arg_EXPECT_FAILURE}\"")
        endif()
        string(REGEX REPLACE "[ \n]+" " " flat "${out}")  # CMake wraps messages
        if(NOT flat MATCHES "${arg_EXPECT_FAILURE}")
            message(FATAL_ERROR "${build}: configuring failed without saying \"${arg_EXPECT_FAILURE}\"")
        endif()
        message("${build}: configuring failed as it should")
    elseif(NOT rc EQUAL 0)
        message(FATAL_ERROR "${build}: configuring failed")
    endif()
    set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# Builds ${WORK_DIR}/<build> and runs its `app`, which must print `expected`.
function(build_and_run build expected)
    execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/${build} --parallel 1
                    COMMAND_ERROR_IS_FATAL ANY)
    run(${WORK_DIR}/${build} ${expected})
endfunction()

function(run dir expected)
    execute_process(COMMAND ${dir}/app RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    message("${out}")
    if(NOT rc EQUAL 0 OR NOT out MATCHES "${expected}")
        message(FATAL_ERROR "${dir}/app: exit code ${rc}; expected an exit code 0 and \"${expected}\"")
    endif()
endfunction()

# The subproject's options as the consumer's cache holds them: tests, examples and benchmarks must
# default to OFF there (else the consumer would build them all).
function(expect_subproject_defaults build)
    file(STRINGS ${WORK_DIR}/${build}/CMakeCache.txt cache REGEX "^PTPU_BUILD_[A-Z]+:BOOL=")
    foreach(part TESTS EXAMPLES BENCHMARKS)
        if(NOT "PTPU_BUILD_${part}:BOOL=OFF" IN_LIST cache)
            message(FATAL_ERROR "${build}: PTPU_BUILD_${part} is not OFF in a subproject (${cache})")
        endif()
    endforeach()
endfunction()

if(WAY STREQUAL "find_package")
    set(prefix ${WORK_DIR}/prefix)
    execute_process(COMMAND ${CMAKE_COMMAND} --install ${PTPU_BINARY_DIR} --prefix ${prefix}
                    COMMAND_ERROR_IS_FATAL ANY)
    make_consumer(app find_package kernel.cpp)
    configure(app build ignored -DCMAKE_PREFIX_PATH=${prefix} ${without_sweep_deps})
    build_and_run(build "consumer with the compiled runtime: ok")
    make_consumer(app_sweep find_package_sweep sweep_kernel.cpp)
    configure(app_sweep build_sweep_missing ignored -DCMAKE_PREFIX_PATH=${prefix} ${without_sweep_deps}
              EXPECT_FAILURE "${sweep_missing_message}")
    configure(app_sweep build_sweep ignored -DCMAKE_PREFIX_PATH=${prefix})
    build_and_run(build_sweep "consumer sweep with the compiled runtime: ok")
    # An installation made without the sweep (and with nothing compiled: PTPU_HEADER_ONLY, so
    # no build is needed before installing) must say so when the sweep is asked for.
    execute_process(COMMAND ${CMAKE_COMMAND} -S ${PTPU_SOURCE_DIR} -B ${WORK_DIR}/ptpu_without_sweep -G Ninja
                            -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DPTPU_BUILD_TESTS=OFF -DPTPU_BUILD_EXAMPLES=OFF
                            -DPTPU_BUILD_BENCHMARKS=OFF -DPTPU_SWEEP=OFF -DPTPU_HEADER_ONLY=ON
                    OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
    execute_process(COMMAND ${CMAKE_COMMAND} --install ${WORK_DIR}/ptpu_without_sweep
                            --prefix ${WORK_DIR}/prefix_without_sweep
                    OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
    configure(app_sweep build_sweep_not_installed ignored -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix_without_sweep
              EXPECT_FAILURE "this installation of ptpu has no ptpu::sweep")
elseif(WAY STREQUAL "add_subdirectory")
    make_consumer(app add_subdirectory kernel.cpp LINK_PTPU)
    configure(app build out ${without_sweep_deps})
    expect_subproject_defaults(build)
    if(NOT out MATCHES "no ptpu::sweep \\(PTPU_SWEEP=AUTO\\)")
        message(FATAL_ERROR "build: ptpu did not say that it left out ptpu::sweep")
    endif()
    build_and_run(build "consumer with the compiled runtime: ok")
elseif(WAY STREQUAL "fetchcontent")
    if(NOT GIT_EXECUTABLE)
        message(FATAL_ERROR "consume.cmake: GIT_EXECUTABLE is not set")
    endif()
    # A git repository (branch main) holding the source tree's files as they are now: the tracked
    # ones and the untracked ones git does not ignore.
    execute_process(COMMAND ${GIT_EXECUTABLE} -c core.quotePath=false ls-files --cached --others --exclude-standard
                    WORKING_DIRECTORY ${PTPU_SOURCE_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE files ERROR_QUIET)
    if(NOT rc EQUAL 0)
        message("package test skipped: ${PTPU_SOURCE_DIR} is not a git checkout")
        return()
    endif()
    set(repo ${WORK_DIR}/ptpu-git)
    string(REPLACE "\n" ";" files "${files}")
    foreach(f IN LISTS files)
        if(f AND EXISTS ${PTPU_SOURCE_DIR}/${f} AND NOT IS_DIRECTORY ${PTPU_SOURCE_DIR}/${f})
            get_filename_component(d ${repo}/${f} DIRECTORY)
            file(MAKE_DIRECTORY ${d})
            file(COPY_FILE ${PTPU_SOURCE_DIR}/${f} ${repo}/${f})
        endif()
    endforeach()
    foreach(step "init --quiet --initial-branch=main" "add --all"
                 "-c user.name=ptpu -c user.email=ptpu@localhost commit --quiet --no-gpg-sign -m snapshot")
        separate_arguments(args UNIX_COMMAND "${step}")
        execute_process(COMMAND ${GIT_EXECUTABLE} ${args} WORKING_DIRECTORY ${repo} COMMAND_ERROR_IS_FATAL ANY)
    endforeach()
    make_consumer(app fetchcontent sweep_kernel.cpp)
    configure(app build_missing ignored -DPTPU_GIT_REPOSITORY=${repo} ${without_sweep_deps}
              EXPECT_FAILURE "${sweep_missing_message}")
    configure(app build ignored -DPTPU_GIT_REPOSITORY=${repo})
    expect_subproject_defaults(build)
    build_and_run(build "consumer sweep with the compiled runtime: ok")
elseif(WAY STREQUAL "without_cmake")
    find_program(gxx g++)
    if(NOT gxx OR NOT EXISTS /usr/include/eigen3/Eigen/Core)
        message("package test skipped: the commands shown need g++ and Eigen in /usr/include/eigen3")
        return()
    endif()
    make_consumer(app without_cmake kernel.cpp LINK_PTPU)
    execute_process(COMMAND sh -e -x build.sh WORKING_DIRECTORY ${WORK_DIR}/app COMMAND_ERROR_IS_FATAL ANY)
    run(${WORK_DIR}/app "consumer with the compiled runtime: ok")
else()
    message(FATAL_ERROR "consume.cmake: unknown WAY \"${WAY}\"")
endif()
message("package.${WAY}: ok")

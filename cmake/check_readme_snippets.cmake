# cmake -DREADME=<README.md or docs/x.md> -DROOT=<source dir> [-DALLOW_NONE=ON] -P check_readme_snippets.cmake
#
# Docs are code: every ```cpp block of a doc (README.md, docs/*.md) must follow a line naming its
# file, "`examples/<name>.cpp`:", and equal that file byte for byte, or follow
# "`examples/<name>.cpp`, excerpt:" and appear in that file verbatim (whole lines), so what the
# docs show is what ctest compiles and runs (label example). Fails when a block has no file, when
# the text differs, or, unless ALLOW_NONE is set (a doc without C++), when the doc has no such
# block at all (never passes vacuously). Text that is not a program (output, commands, signatures)
# goes in ```text or ```sh blocks.
if(NOT README OR NOT ROOT)
    message(FATAL_ERROR "usage: cmake -DREADME=<doc.md> -DROOT=<source dir> [-DALLOW_NONE=ON] -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
get_filename_component(doc_name "${README}" NAME)
file(READ "${README}" text)

set(fence "```cpp\n")
set(close "\n```\n")
string(REGEX MATCHALL "```cpp\n" blocks "${text}")
list(LENGTH blocks n_blocks)
string(REGEX MATCHALL "`examples/[A-Za-z0-9_]+\\.cpp`(, excerpt)?:\n\n```cpp\n" markers "${text}")
list(LENGTH markers n_markers)
if(n_blocks EQUAL 0)
    if(ALLOW_NONE)
        message(STATUS "${doc_name}: no ```cpp block")
        message(STATUS "doc snippets: 0 checked")
        return()
    endif()
    message(FATAL_ERROR "${README}: no ```cpp block; this check would pass vacuously")
endif()
if(NOT n_blocks EQUAL n_markers)
    message(FATAL_ERROR "${README}: ${n_blocks} ```cpp blocks but ${n_markers} of them follow a "
                        "\"`examples/<name>.cpp`:\" line; put each snippet in an example file and name it")
endif()

set(rest "${text}")
foreach(marker IN LISTS markers)
    string(REGEX MATCH "examples/[A-Za-z0-9_]+\\.cpp" file "${marker}")
    string(FIND "${rest}" "${marker}" at)
    string(LENGTH "${marker}" marker_len)
    math(EXPR body_at "${at} + ${marker_len}")
    string(SUBSTRING "${rest}" ${body_at} -1 rest)
    string(FIND "${rest}" "${close}" end)
    if(end EQUAL -1)
        message(FATAL_ERROR "${README}: the ```cpp block of ${file} is not closed")
    endif()
    math(EXPR snippet_len "${end} + 1")  # keep the last line's newline
    string(SUBSTRING "${rest}" 0 ${snippet_len} snippet)
    if(NOT EXISTS "${ROOT}/${file}")
        message(FATAL_ERROR "${README}: names ${file}, which does not exist")
    endif()
    file(READ "${ROOT}/${file}" source)
    if(marker MATCHES ", excerpt:")
        string(FIND "\n${source}" "\n${snippet}" found)
        if(found EQUAL -1)
            message(FATAL_ERROR "${README}: the excerpt shown for ${file} is not in the file; copy it "
                                "from the file (whole lines)")
        endif()
        message(STATUS "${file}: ${doc_name} shows an excerpt of it exactly")
        continue()
    endif()
    if(NOT snippet STREQUAL source)
        message(FATAL_ERROR "${README}: the snippet shown for ${file} differs from the file; make them "
                            "identical (the file is what ctest builds)")
    endif()
    message(STATUS "${file}: ${doc_name} shows it exactly")
endforeach()
message(STATUS "doc snippets: ${n_markers} checked in ${doc_name}")

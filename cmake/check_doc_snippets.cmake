# cmake -DDOC=<file.md> -DROOT=<source dir> -DFILES=<path;path;...> -P check_doc_snippets.cmake
#
# Docs are code, for docs whose snippets are files that tests build: a fenced block
# right after a line `<!-- <path> -->` (a comment, not rendered) must equal the file ROOT/<path>
# byte for byte. Fails when a block differs from its file, when one of FILES is not shown, when a
# ```cmake block has no such line (CMake in the doc that nothing builds), or when the doc has no
# such block at all (never passes vacuously).
cmake_minimum_required(VERSION 3.25)  # script mode: the policies of 3.25 (IN_LIST, ...)
if(NOT DOC OR NOT ROOT OR NOT FILES)
    message(FATAL_ERROR "usage: cmake -DDOC=<file.md> -DROOT=<source dir> -DFILES=<paths> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
file(READ "${DOC}" text)

string(REGEX MATCHALL "<!-- [^ \n]+ -->\n```[a-z]*\n" markers "${text}")
list(LENGTH markers n_markers)
if(n_markers EQUAL 0)
    message(FATAL_ERROR "${DOC}: no block follows a \"<!-- <path> -->\" line; this check would pass vacuously")
endif()
string(REGEX MATCHALL "```cmake\n" cmake_blocks "${text}")
string(REGEX MATCHALL "<!-- [^ \n]+ -->\n```cmake\n" cmake_markers "${text}")
list(LENGTH cmake_blocks n_cmake)
list(LENGTH cmake_markers n_cmake_markers)
if(NOT n_cmake EQUAL n_cmake_markers)
    message(FATAL_ERROR "${DOC}: ${n_cmake} ```cmake blocks but ${n_cmake_markers} of them follow a "
                        "\"<!-- <path> -->\" line; put each in a file a test builds and name it")
endif()

set(shown "")
set(rest "${text}")
foreach(marker IN LISTS markers)
    string(REGEX MATCH "<!-- ([^ \n]+) -->" _ "${marker}")
    set(file "${CMAKE_MATCH_1}")
    string(FIND "${rest}" "${marker}" at)
    string(LENGTH "${marker}" marker_len)
    math(EXPR body_at "${at} + ${marker_len}")
    string(SUBSTRING "${rest}" ${body_at} -1 rest)
    string(FIND "${rest}" "\n```\n" end)
    if(end EQUAL -1)
        message(FATAL_ERROR "${DOC}: the block of ${file} is not closed")
    endif()
    math(EXPR snippet_len "${end} + 1")  # keep the last line's newline
    string(SUBSTRING "${rest}" 0 ${snippet_len} snippet)
    if(NOT EXISTS "${ROOT}/${file}")
        message(FATAL_ERROR "${DOC}: names ${file}, which does not exist")
    endif()
    file(READ "${ROOT}/${file}" source)
    if(NOT snippet STREQUAL source)
        message(FATAL_ERROR "${DOC}: the block shown for ${file} differs from the file; make them "
                            "identical (the file is what ctest builds)")
    endif()
    list(APPEND shown "${file}")
    message(STATUS "${file}: shown exactly")
endforeach()
foreach(file IN LISTS FILES)
    if(NOT file IN_LIST shown)
        message(FATAL_ERROR "${DOC}: does not show ${file} (a block after \"<!-- ${file} -->\")")
    endif()
endforeach()
message(STATUS "doc snippets: ${n_markers} checked")

# Checks that the project's own text stands on its own: README.md, docs/*.md and every file under
# include/ may not cite an issue number, a commit hash or a file outside the repository, and
# README.md stays a front door of at most MAX_README_LINES lines (docs/ holds the rest).
#
#   cmake -DROOT=<source dir> [-DBASE=<dir paths are printed relative to>]
#         [-DMAX_README_LINES=350] -P check_no_history.cmake
#
# What it reports, one line each, `<file>:<line>: <what>`:
# - `issue 12`, `issues 3 and 8`, `Issue #4` (a number after the word; `DMA issue 0.256 us`, a
#   decimal, is the act of issuing and passes);
# - a commit hash: a word of 7 to 40 hex digits holding both a digit and a letter a-f, anywhere in
#   a .md file; in other files only inside a `//` comment and only where it reads as a commit
#   reference (the comment says "commit", the word is in backticks, or it follows "against",
#   "before", "after", "since" or "at"), so hex constants in code never match;
# - the names of files that are not in the repository: pallas-semantics(.md), tpu-model(.md),
#   architecture.md, style.md, ../shared;
# - README.md longer than MAX_README_LINES lines.
# Exits with an error when there is any; prints `no_history: ok, ...` otherwise. Plain CMake:
# no build needed.
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED ROOT)
    message(FATAL_ERROR "check_no_history: pass -DROOT=<source dir>")
endif()
if(NOT DEFINED BASE)
    set(BASE ${ROOT})
endif()
if(NOT DEFINED MAX_README_LINES)
    set(MAX_README_LINES 350)
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
get_filename_component(BASE "${BASE}" ABSOLUTE)

set(problems "")

# The text of a file as a list of lines. `;`, brackets and backslashes would split or glue list
# elements; they are replaced first (none of the patterns below needs them).
function(_read_lines path out)
    file(READ ${path} text)
    string(REPLACE ";" "<semicolon>" text "${text}")
    string(REPLACE "[" "<lbracket>" text "${text}")
    string(REPLACE "]" "<rbracket>" text "${text}")
    string(REPLACE "\\" "<backslash>" text "${text}")
    string(REPLACE "\n" ";" text "${text}")
    set(${out} "${text}" PARENT_SCOPE)
endfunction()

set(issue_re "(^|[^A-Za-z])[Ii][Ss][Ss][Uu][Ee][Ss]? #?[0-9]+(\\.[0-9])?")
set(outside_re "pallas-semantics|tpu-model|architecture\\.md|style\\.md|\\.\\./shared")
set(hex_re "(^|[^0-9A-Za-z_])[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]+([^0-9A-Za-z_]|$)")
set(commit_context_re "(against|before|after|since|at) `?$")

# The commit-hash-like words of `text`: 7 to 40 hex digits with at least one digit and one
# letter (so neither a plain number nor a word such as `deadbeef`).
function(_hex_words text out)
    set(found "")
    string(REGEX MATCHALL "${hex_re}" ms "${text}")
    foreach(m IN LISTS ms)
        string(REGEX REPLACE "^[^0-9a-f]" "" w "${m}")
        string(REGEX REPLACE "[^0-9a-f]$" "" w "${w}")
        string(LENGTH "${w}" len)
        if(len GREATER 40 OR NOT w MATCHES "[0-9]" OR NOT w MATCHES "[a-f]")
            continue()
        endif()
        list(APPEND found "${w}")
    endforeach()
    set(${out} "${found}" PARENT_SCOPE)
endfunction()

function(_check_file path is_md)
    file(READ ${path} whole)
    # Most files have no candidate at all: skip the line-by-line pass for them.
    set(candidate FALSE)
    if(whole MATCHES "${issue_re}" OR whole MATCHES "${outside_re}" OR whole MATCHES "${hex_re}")
        set(candidate TRUE)
    endif()
    if(NOT candidate)
        return()
    endif()
    file(RELATIVE_PATH shown ${BASE} ${path})
    _read_lines(${path} lines)
    set(found "")
    set(n 0)
    foreach(line IN LISTS lines)
        math(EXPR n "${n} + 1")
        string(REGEX MATCHALL "${issue_re}" ms "${line}")
        foreach(m IN LISTS ms)
            if(NOT m MATCHES "\\.[0-9]$")
                string(REGEX REPLACE "^[^A-Za-z]" "" m "${m}")
                list(APPEND found "${shown}:${n}: `${m}`: an issue number (state the fact itself, or drop it)")
            endif()
        endforeach()
        string(REGEX MATCHALL "${outside_re}" ms "${line}")
        foreach(m IN LISTS ms)
            list(APPEND found "${shown}:${n}: `${m}`: a file outside the repository (cite docs/model.md or docs/rules.md instead)")
        endforeach()
        if(is_md)
            set(scope "${line}")
        elseif(line MATCHES "//(.*)$")
            set(scope "${CMAKE_MATCH_1}")
        else()
            continue()
        endif()
        _hex_words("${scope}" words)
        foreach(w IN LISTS words)
            set(flag ${is_md})
            if(NOT flag)
                string(FIND "${scope}" "${w}" at)
                string(SUBSTRING "${scope}" 0 ${at} before)
                string(TOLOWER "${scope}" lower)
                if(lower MATCHES "commit" OR scope MATCHES "`${w}`" OR before MATCHES "${commit_context_re}")
                    set(flag TRUE)
                endif()
            endif()
            if(flag)
                list(APPEND found "${shown}:${n}: `${w}`: a commit hash (state the fact itself, or drop it)")
            endif()
        endforeach()
    endforeach()
    set(problems ${problems} ${found} PARENT_SCOPE)
endfunction()

set(n_files 0)
set(readme ${ROOT}/README.md)
if(NOT EXISTS ${readme})
    message(FATAL_ERROR "check_no_history: ${readme} does not exist")
endif()
_check_file(${readme} TRUE)
math(EXPR n_files "${n_files} + 1")

file(READ ${readme} readme_text)
string(REGEX MATCHALL "\n" newlines "${readme_text}")
list(LENGTH newlines readme_lines)
if(NOT readme_text STREQUAL "" AND NOT readme_text MATCHES "\n$")
    math(EXPR readme_lines "${readme_lines} + 1")
endif()
if(readme_lines GREATER MAX_README_LINES)
    file(RELATIVE_PATH shown ${BASE} ${readme})
    list(APPEND problems "${shown}: ${readme_lines} lines, more than ${MAX_README_LINES} (move sections into docs/)")
endif()

file(GLOB docs LIST_DIRECTORIES false ${ROOT}/docs/*.md)
list(SORT docs)
foreach(f IN LISTS docs)
    _check_file(${f} TRUE)
    math(EXPR n_files "${n_files} + 1")
endforeach()

file(GLOB_RECURSE headers LIST_DIRECTORIES false ${ROOT}/include/*)
list(SORT headers)
foreach(f IN LISTS headers)
    if(f MATCHES "\\.md$")
        _check_file(${f} TRUE)
    else()
        _check_file(${f} FALSE)
    endif()
    math(EXPR n_files "${n_files} + 1")
endforeach()

list(LENGTH problems n_bad)
if(n_bad GREATER 0)
    foreach(p IN LISTS problems)
        message("${p}")
    endforeach()
    message(FATAL_ERROR "no_history: ${n_bad} problem(s) in README.md, docs/ and include/")
endif()
message("no_history: ok, ${n_files} files (README.md ${readme_lines} lines, at most ${MAX_README_LINES})")

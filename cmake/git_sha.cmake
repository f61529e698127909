# Run at every build (the ctk_git_sha target): writes OUT with the source tree's commit as CTK_GIT_SHA,
# touching it only when the commit changed, so that the banner's "Build SHA1" names the commit built
# (a configure-time value went stale with every commit after it) and nothing rebuilds otherwise.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SRC}"
                OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT sha)
    set(sha "unknown")
endif()
set(text "#define CTK_GIT_SHA \"${sha}\"\n")
if(EXISTS "${OUT}")
    file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
    file(WRITE "${OUT}" "${text}")
endif()

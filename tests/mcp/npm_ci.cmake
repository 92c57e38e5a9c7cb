# Installs the pinned MCP reference servers into the build tree:
#   cmake -DNODE=<node> -DNPM=<npm> -DSOURCE=<dir with package.json + lock> -DDEST=<dir> -P npm_ci.cmake
# Runs `npm ci` only when DEST has no install of the current lockfile.
foreach(var NODE NPM SOURCE DEST)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "npm_ci.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT NODE OR NODE MATCHES "NOTFOUND$" OR NOT NPM OR NPM MATCHES "NOTFOUND$")
  message(FATAL_ERROR "The MCP tests need node (>= 20) and npm on PATH to install the MCP reference servers; "
                      "install them (make deps does) and re-run cmake.")
endif()

file(SHA256 ${SOURCE}/package-lock.json lock_hash)
set(stamp ${DEST}/node_modules/.agentkit-lock-sha256)
if(EXISTS ${stamp})
  file(READ ${stamp} installed_hash)
  if(installed_hash STREQUAL lock_hash)
    message(STATUS "MCP servers already installed from this lockfile in ${DEST}")
    return()
  endif()
endif()

file(MAKE_DIRECTORY ${DEST})
file(COPY ${SOURCE}/package.json ${SOURCE}/package-lock.json DESTINATION ${DEST})
execute_process(COMMAND ${NPM} ci --no-audit --no-fund --ignore-scripts --loglevel=error
                WORKING_DIRECTORY ${DEST} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "npm ci failed (${rc}) in ${DEST}")
endif()
file(WRITE ${stamp} ${lock_hash})
message(STATUS "MCP servers installed in ${DEST}")

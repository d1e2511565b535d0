# lowbit_require(<package> <debian-package> <what> [OPTION <option>] [NAME <name>])
#
# Finds <package> for the part of the build called <what> ("tests",
# "benchmarks", "examples"). When it is missing, stops with one line that
# says which Debian package provides it and which option turns that part off,
# instead of CMake's multi-paragraph find_package diagnostics.
function(lowbit_require package debian_package what)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "OPTION;NAME" "")
  if(NOT arg_NAME)
    set(arg_NAME "${package}")
  endif()
  find_package(${package} QUIET)
  if(NOT ${package}_FOUND)
    set(hint "")
    if(arg_OPTION)
      set(hint " (or configure with -D${arg_OPTION}=OFF)")
    endif()
    # The leading space keeps CMake from wrapping the line.
    message(FATAL_ERROR
      " lowbit ${what} need ${arg_NAME}: apt-get install ${debian_package}${hint}")
  endif()
endfunction()

# Compiles main.cpp with nothing but the compiler and -I include, then runs it
# (cmake -P), the way a user who copies include/lowbit/ into a tree would.
foreach(var CXX INCLUDE_DIR SOURCE OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()
get_filename_component(output_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${output_dir}")
execute_process(
  COMMAND "${CXX}" -std=c++17 "-I${INCLUDE_DIR}" "${SOURCE}" -o "${OUTPUT}"
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "compiling ${SOURCE} failed: ${result}")
endif()
execute_process(COMMAND "${OUTPUT}" RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${OUTPUT} exited with ${result}")
endif()

# For every scheme: lowbit quantize model.safetensors, then lowbit report --json of the result,
# and tool_testkit check-quantized on it (every name, dtype and shape as the scheme's layout says).
#   TOOL, TESTKIT, DIR (holds model.safetensors), SCHEMES (separated by |)
cmake_minimum_required(VERSION 3.16)
string(REPLACE "|" ";" schemes "${SCHEMES}")
foreach(s IN LISTS schemes)
  set(q "${DIR}/quantized-${s}.safetensors")
  file(REMOVE "${q}")
  execute_process(COMMAND "${TOOL}" quantize "${DIR}/model.safetensors" "${q}" --scheme ${s}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT EXISTS "${q}")
    message(FATAL_ERROR "quantize --scheme ${s}: exit ${rc}\n${out}${err}")
  endif()
  if(NOT out MATCHES "layers\\.0\\.mlp\\.outlier\\.weight  \\[64, 256\\] F32 -> ${s} \\([a-z_, ]+\\): SQNR [0-9.]+ dB")
    message(FATAL_ERROR "quantize --scheme ${s}: no per-layer SQNR line for the outlier weight\n${out}")
  endif()
  execute_process(COMMAND "${TOOL}" report "${q}" --json
    RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "report of the ${s} output: exit ${rc}\n${err}")
  endif()
  file(WRITE "${DIR}/quantized-${s}.json" "${json}")
  execute_process(COMMAND "${TESTKIT}" check-quantized "${DIR}/quantized-${s}.json" ${s}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check-quantized ${s}:\n${out}${err}")
  endif()
  message(STATUS "${s}: quantized, reported, names and shapes as expected")
endforeach()

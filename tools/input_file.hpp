// lowbit tool: opening an input tensor file. Whatever lowbit::io::tensor_file reads
// (.safetensors, .npy, a TF.js model.json and its shards; GGUF when it does), chosen by the
// file's name or first bytes; the views stay valid while the returned object lives.
#ifndef LOWBIT_TOOL_INPUT_FILE_HPP
#define LOWBIT_TOOL_INPUT_FILE_HPP

#include <lowbit/io/tensor.hpp>
#include <lowbit/io/tensor_file.hpp>

#include <string>

namespace lowbit_tool {

using input_file = lowbit::io::tensor_file;

}  // namespace lowbit_tool

#endif  // LOWBIT_TOOL_INPUT_FILE_HPP

// llama.cpp's command-line conventions that CLI11 does not have: its short flags of two or more
// letters ("-ngl", "-md": CLI11 names short flags with one letter and would read "-ngl 99" as
// "-n gl 99"), and its escape sequences in prompts.
#pragma once
#include <string>
#include <vector>

namespace minfer::cli {

// argv with llama.cpp's multi-letter short flags given as the long forms minfer's commands
// define ("-ngl" -> "--n-gpu-layers"); nothing after "--" is touched. A llama.cpp flag minfer
// has no counterpart for (-ot, -np, -hf, ...) is an Error that names its long form and why.
std::vector<char*> with_llama_cpp_flags(int argc, char** argv);

// llama.cpp's string_process_escapes (its -e, on by default): \n \r \t \' \" \\ and \xHH become
// the characters they name; any other backslash stays as written.
std::string process_escapes(const std::string& s);

}  // namespace minfer::cli

#include "quant/types.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace minfer {
namespace {

struct Entry {
  uint32_t id;
  TypeTraits tr;
};

// Block sizes and byte sizes from ggml's block structs (ggml-common.h).
constexpr Entry kTable[] = {
    {0, {"F32", 1, 4, false, true, true}},
    {1, {"F16", 1, 2, false, true, true}},
    {2, {"Q4_0", 32, 18, true, true, true}},
    {3, {"Q4_1", 32, 20, true, true, true}},
    {6, {"Q5_0", 32, 22, true, true, true}},
    {7, {"Q5_1", 32, 24, true, true, true}},
    {8, {"Q8_0", 32, 34, true, true, true}},
    {9, {"Q8_1", 32, 36, true, false, false}},
    {10, {"Q2_K", 256, 84, true, true, true}},
    {11, {"Q3_K", 256, 110, true, true, true}},
    {12, {"Q4_K", 256, 144, true, true, true}},
    {13, {"Q5_K", 256, 176, true, true, true}},
    {14, {"Q6_K", 256, 210, true, true, true}},
    {15, {"Q8_K", 256, 292, true, true, true}},
    {16, {"IQ2_XXS", 256, 66, true, true, true}},
    {17, {"IQ2_XS", 256, 74, true, true, true}},
    {18, {"IQ3_XXS", 256, 98, true, true, true}},
    {19, {"IQ1_S", 256, 50, true, true, true}},
    {20, {"IQ4_NL", 32, 18, true, true, true}},
    {21, {"IQ3_S", 256, 110, true, true, true}},
    {22, {"IQ2_S", 256, 82, true, true, true}},
    {23, {"IQ4_XS", 256, 136, true, true, true}},
    {24, {"I8", 1, 1, false, false, false}},
    {25, {"I16", 1, 2, false, false, false}},
    {26, {"I32", 1, 4, false, false, false}},
    {27, {"I64", 1, 8, false, false, false}},
    {28, {"F64", 1, 8, false, false, false}},
    {29, {"IQ1_M", 256, 56, true, true, true}},
    {30, {"BF16", 1, 2, false, true, true}},
    {34, {"TQ1_0", 256, 54, true, true, true}},
    {35, {"TQ2_0", 256, 66, true, true, true}},
    {39, {"MXFP4", 32, 17, true, true, true}},
    {40, {"NVFP4", 64, 36, true, true, true}},
    {41, {"Q1_0", 128, 18, true, true, true}},
    {42, {"Q2_0", 64, 18, true, true, true}},
};

}  // namespace

const TypeTraits* type_traits(uint32_t id) {
  for (const Entry& e : kTable)
    if (e.id == id) return &e.tr;
  return nullptr;
}

const TypeTraits& type_traits(GgmlType t) { return *type_traits(static_cast<uint32_t>(t)); }

std::string_view type_name(GgmlType t) { return type_traits(t).name; }

std::optional<GgmlType> type_from_name(std::string_view name) {
  auto eq = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::toupper((unsigned char)x) == std::toupper((unsigned char)y);
           });
  };
  for (const Entry& e : kTable)
    if (eq(e.tr.name, name)) return static_cast<GgmlType>(e.id);
  return std::nullopt;
}

}  // namespace minfer

// CNTK's higher-order layers (cntk.layers' higher_order_layers.py): composition of other layers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ctk/graph/function.h"

namespace ctk::layers {

// Function composition: layers[0] first.
FunctionPtr Sequential(const std::vector<FunctionPtr>& layers, const std::string& name = "");
// constructor(0), ..., constructor(n - 1).
std::vector<FunctionPtr> For(int n, const std::function<FunctionPtr(int)>& constructor);
// f(x) + x.
FunctionPtr ResNetBlock(const FunctionPtr& f, const std::string& name = "");
// Each function gets the sum of the input and all previous outputs.
FunctionPtr SequentialClique(const std::vector<FunctionPtr>& functions, const std::string& name = "");

}  // namespace ctk::layers

// CNTK v1 (cntk.exe / BrainScript) model files: read only.
#include "ctk/error.h"
#include "ctk/model.h"

namespace ctk {

FunctionPtr load_cntk_v1_model(const std::string& path) {
    throw NotImplementedError("load_cntk_v1_model: reading CNTK v1 models is not implemented yet (" + path +
                              ")");
}

}  // namespace ctk

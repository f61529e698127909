// CNTK v2 Dictionary files (protobuf) read and written.
#include "cntk.pb.h"
#include "ctk/model.h"

namespace ctk {}  // namespace ctk

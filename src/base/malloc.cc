#include "base/malloc.h"

#include <malloc.h>

namespace kvol {

bool ConfigureAllocator() { return mallopt(M_MXFAST, 0) == 1; }

}  // namespace kvol

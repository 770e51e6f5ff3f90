// The common module is header-only today; this file gives the library a translation unit.
#include "common/error.h"
#include "common/fp16.h"

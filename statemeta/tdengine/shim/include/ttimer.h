/* statemeta stub header: everything lives in shim.h. */
#include "shim.h"

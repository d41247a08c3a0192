// model/model.cpp — see model.h.
#include "model/model.h"

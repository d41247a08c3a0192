// model/model.h — placeholder header so the model library is never empty; the
// architecture config, KV cache, planner and forward passes live beside it.
#pragma once

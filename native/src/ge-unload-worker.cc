#include "ge-unload-worker.h"

#include "ge-model.h"

GeUnloadWorker::GeUnloadWorker(Napi::Env env, GeModel *model, Napi::Object modelObject)
    : PromiseWorker(env, "serve-fn:npu:ge-unload", modelObject), model_(model) {}

NpuStatus GeUnloadWorker::Run() { return model_->graph().Unload(); }

#include "unload-worker.h"

#include "om-model.h"

UnloadWorker::UnloadWorker(Napi::Env env, OmModel *model, Napi::Object modelObject)
    : PromiseWorker(env, "serve-fn:npu:unload", modelObject), model_(model) {}

NpuStatus UnloadWorker::Run() { return model_->model().Unload(); }

void UnloadWorker::Settled() { model_->OperationDone(); }

#include "ge-convert-worker.h"

#include <dirent.h>
#include <sys/stat.h>

#include <ctime>
#include <set>

#include "ge-api.h"
#include "ge-environment.h"
#include "ge-status.h"
#include "js-arguments.h"

namespace {

// The options aclgrphBuildModel accepts, by their key strings: metadef 8.5.0
// inc/external/ge_common/ge_api_types.h, ir_option::ir_builder_suppported_options (GE refuses a
// build option outside it, compiler/api/aclgrph/ge_ir_build.cc). Every other option, soc version
// included, is a global one for aclgrphBuildInitialize.
const std::set<std::string> &BuildModelKeys() {
  static const auto *keys = new std::set<std::string>{
      "ac_parallel_enable", "ge.INPUT_NODES_SET_FP16", "ge.autoTuneMode", "ge.build_inner_model", "ge.customizeDtypes",
      "ge.debugDir", "ge.distributed_cluster_build", "ge.dynamicBatchSize", "ge.dynamicDims", "ge.dynamicImageSize",
      "ge.enableGraphParallel", "ge.exec.allow_hf32", "ge.exec.disableReuseMemory", "ge.exec.exclude_engines",
      "ge.exec.modify_mixlist", "ge.exec.op_precision_mode", "ge.exec.precision_mode", "ge.exec.precision_mode_v2",
      "ge.exec.tuneDeviceIds", "ge.exportCompileStat", "ge.externalWeight", "ge.graphMaxParallelModelNum",
      "ge.graphParallelOptionPath", "ge.inputHintShape", "ge.insertOpFile", "ge.mdl_bank_path", "ge.offline_model_relation",
      "ge.oo.constantFolding", "ge.oo.deadCodeElimination", "ge.oo.level", "ge.opDebugLevel", "ge.op_bank_path",
      "ge.op_bank_update", "ge.op_compiler_cache_dir", "ge.op_compiler_cache_mode", "ge.optimizationSwitch",
      "ge.outputDatatype", "ge.outputNodeName", "ge.performance_mode", "ge.quant_dumpable",
      "ge.shape_generalized_build_mode", "ge.tiling_schedule_optimize", "input_format", "input_shape",
      "input_shape_range", "log", "op_debug_config", "op_debug_option", "op_name_map"};
  return *keys;
}

bool EndsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool WrittenSince(const std::string &path, time_t since) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && info.st_mtime >= since;
}

// aclgrphSaveModel always appends ".om", and names the file <stem>_<os>_<arch>.om when the model
// carries operator binaries for one platform (docs/graph_engine_api/aclgrphSaveModel.md;
// compiler/api/aclgrph/ge_ir_build.cc). So the stem handed to it drops the user's ".om", and the
// written file is looked up afterwards.
std::string WrittenFile(const std::string &stem, time_t since) {
  if (WrittenSince(stem + ".om", since)) return stem + ".om";
  size_t slash = stem.rfind('/');
  std::string dir = slash == std::string::npos ? "." : stem.substr(0, slash);
  std::string base = stem.substr(slash == std::string::npos ? 0 : slash + 1) + "_";
  std::string found;
  if (DIR *listing = opendir(dir.c_str())) {
    while (dirent *entry = readdir(listing)) {
      std::string name = entry->d_name;
      std::string path = dir + "/" + name;
      if (name.compare(0, base.size(), base) == 0 && EndsWith(name, ".om") && WrittenSince(path, since)) found = path;
    }
    closedir(listing);
  }
  return found;
}

}  // namespace

GeConvertWorker::GeConvertWorker(Napi::Env env, GeConvertRequest request)
    : PromiseWorker(env, "serve-fn:npu:ge-convert"), request_(std::move(request)) {}

NpuStatus GeConvertWorker::Build() {
  StringOptions globalOptions;
  StringOptions buildOptions;
  for (const auto &entry : request_.buildOptions) {
    (BuildModelKeys().count(entry.first) ? buildOptions : globalOptions).insert(entry);
  }
  // Named, not temporaries: aclgrphBuildInitialize takes its map by non-const reference.
  ge::Options global = ToGeOptions(globalOptions);
  ge::Options build = ToGeOptions(buildOptions);
  NpuStatus status = GE_CALL(aclgrphBuildInitialize, (global));
  if (!status.ok) return status;
  ge::Graph graph;
  status = GeEnvironment::ParseOnnx(request_.source, request_.parserOptions, &graph);
  ge::ModelBufferData model;
  model.length = 0;
  if (status.ok) status = GE_CALL(aclgrphBuildModel, (graph, build, model));
  std::string stem = EndsWith(request_.output, ".om") ? request_.output.substr(0, request_.output.size() - 3) : request_.output;
  time_t started = std::time(nullptr);
  if (status.ok) status = GE_CALL(aclgrphSaveModel, (stem.c_str(), model));
  ge::aclgrphBuildFinalize();
  if (!status.ok) return status;
  file_ = WrittenFile(stem, started);
  if (file_.empty()) return NpuStatus::Failure("aclgrphSaveModel succeeded but wrote neither " + stem + ".om nor " + stem + "_*.om");
  return NpuStatus::Ok();
}

// No aclInit and no device: the IR build API needs neither (docs/graph_engine_api/
// aclgrphBuildInitialize.md names no such precondition, and ATC, which runs the same API, opens no
// device), so a conversion runs on a machine whose NPUs are busy or absent.
NpuStatus GeConvertWorker::Run() {
  NpuStatus status = GeEnvironment::BeginConversion();
  if (!status.ok) return status;
  status = Build();
  GeEnvironment::EndConversion();
  return status;
}

Napi::Value GeConvertWorker::Result(Napi::Env env) {
  Napi::Object result = Napi::Object::New(env);
  result.Set("file", Napi::String::New(env, file_));
  return result;
}

Napi::Value ConvertGeModel(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object options;
  if (!OptionsObject(env, info[0], "convertGeModel", &options)) return env.Undefined();
  GeConvertRequest request;
  if (!ModelFileOrBytes(env, options, &request.source.file, &request.source.bytes) ||
      !OptionalString(env, options.Get("output"), "output", &request.output) ||
      !ReadStringOptions(env, options.Get("parserOptions"), "parserOptions", &request.parserOptions) ||
      !ReadStringOptions(env, options.Get("buildOptions"), "buildOptions", &request.buildOptions)) {
    return env.Undefined();
  }
  if (request.output.empty() || EndsWith(request.output, "/")) {
    Napi::TypeError::New(env, "output must name the .om file to write").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return (new GeConvertWorker(env, std::move(request)))->Start();
}

// The blocked layout of blocked_weights.h, looked up once per weight shape.
#include "engine/cpu/blocked_weights.h"

#include <map>
#include <mutex>
#include <utility>

namespace stamen::engine::cpu {
namespace {

// The row count the layout is asked for: any multiple of 64 up to 512 gives the same one.
constexpr int64_t kLayoutRows = 256;

dnnl::engine& CpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::desc FindLayout(int64_t n, int64_t k) {
  using tag = dnnl::memory::format_tag;
  const auto f32 = dnnl::memory::data_type::f32;
  try {
    const dnnl::matmul::desc descriptor({{kLayoutRows, k}, f32, tag::ab}, {{k, n}, f32, tag::any},
                                        {{kLayoutRows, n}, f32, tag::ab});
    const dnnl::matmul::primitive_desc primitive(descriptor, CpuEngine());
    const std::string implementation = primitive.impl_info_str();
    const dnnl::memory::desc plain({k, n}, f32, tag::ba);
    if (implementation.rfind("brg", 0) != 0 || primitive.weights_desc() == plain) return {};
    return primitive.weights_desc();
  } catch (const dnnl::error&) {
    return {};
  }
}

}  // namespace

const dnnl::memory::desc& BlockedWeightLayout(int64_t n, int64_t k) {
  static std::mutex mutex;
  static std::map<std::pair<int64_t, int64_t>, dnnl::memory::desc> layouts;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = layouts.find({n, k});
  if (it == layouts.end()) it = layouts.emplace(std::make_pair(n, k), FindLayout(n, k)).first;
  return it->second;
}

size_t BlockedWeightBytes(int64_t n, int64_t k) { return BlockedWeightLayout(n, k).get_size(); }

void ReorderToBlocked(const float* weight, int64_t n, int64_t k, void* target) {
  using tag = dnnl::memory::format_tag;
  dnnl::engine& engine = CpuEngine();
  dnnl::memory source({{k, n}, dnnl::memory::data_type::f32, tag::ba}, engine, const_cast<float*>(weight));
  dnnl::memory destination(BlockedWeightLayout(n, k), engine, target);
  dnnl::stream stream(engine);
  dnnl::reorder(source, destination).execute(stream, source, destination);
  stream.wait();
}

}  // namespace stamen::engine::cpu

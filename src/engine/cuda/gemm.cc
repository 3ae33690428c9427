// Gemm on CUDA through cuBLASLt: bf16 operands, fp32 accumulation (CUBLAS_COMPUTE_32F), the
// bias added in the epilogue and, where cuBLASLt has the activation (ReLU, tanh-GELU), that
// too; other activations run as one elementwise kernel after. Descriptors and the heuristic's
// algorithm are cached per shape, so a steady-state call is one cublasLtMatmul. Row-major
// y[m, n] = x[m, k] · W[n, k]ᵀ is computed as the column-major yᵀ = W · xᵀ.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "engine/cuda/context.h"
#include "engine/cuda/kernels.h"

namespace stamen::engine::cuda {

namespace {

struct Plan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t weight = nullptr, input = nullptr, output = nullptr;
  cublasLtMatmulAlgo_t algorithm{};
  bool has_algorithm = false;
  ~Plan() {
    if (operation != nullptr) cublasLtMatmulDescDestroy(operation);
    if (weight != nullptr) cublasLtMatrixLayoutDestroy(weight);
    if (input != nullptr) cublasLtMatrixLayoutDestroy(input);
    if (output != nullptr) cublasLtMatrixLayoutDestroy(output);
  }
};

// m, n, k, epilogue, accumulate.
using PlanKey = std::tuple<int64_t, int64_t, int64_t, int, bool>;

Status CheckBlas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status();
  return Status::Error(std::string("cuBLASLt ") + what + " failed with status " + std::to_string(static_cast<int>(status)));
}

}  // namespace

struct GemmPlans {
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
};

GemmPlans* CreateGemmPlans() { return new GemmPlans(); }
void DestroyGemmPlans(GemmPlans* plans) { delete plans; }

namespace {

StatusOr<Plan*> GetPlan(Context& context, int64_t m, int64_t n, int64_t k, cublasLtEpilogue_t epilogue,
                        bool accumulate) {
  auto& plans = context.gemm_plans().plans;
  const PlanKey key{m, n, k, static_cast<int>(epilogue), accumulate};
  auto found = plans.find(key);
  if (found != plans.end()) return found->second.get();
  auto plan = std::make_unique<Plan>();
  STAMEN_RETURN_IF_ERROR(CheckBlas(cublasLtMatmulDescCreate(&plan->operation, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                                   "matmul descriptor"));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const cublasOperation_t keep = CUBLAS_OP_N;
  STAMEN_RETURN_IF_ERROR(CheckBlas(cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_TRANSA,
                                                                  &transpose, sizeof(transpose)),
                                   "transa"));
  STAMEN_RETURN_IF_ERROR(CheckBlas(
      cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)), "transb"));
  STAMEN_RETURN_IF_ERROR(CheckBlas(
      cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
      "epilogue"));
  const cudaDataType_t bias_type = CUDA_R_16BF;
  STAMEN_RETURN_IF_ERROR(CheckBlas(cublasLtMatmulDescSetAttribute(plan->operation,
                                                                  CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                                  sizeof(bias_type)),
                                   "bias type"));
  // Column-major views: W is k×n (ld k), x is k×m (ld k), y is n×m (ld n).
  STAMEN_RETURN_IF_ERROR(CheckBlas(cublasLtMatrixLayoutCreate(&plan->weight, CUDA_R_16BF, k, n, k), "layout W"));
  STAMEN_RETURN_IF_ERROR(CheckBlas(cublasLtMatrixLayoutCreate(&plan->input, CUDA_R_16BF, k, m, k), "layout x"));
  STAMEN_RETURN_IF_ERROR(CheckBlas(cublasLtMatrixLayoutCreate(&plan->output, CUDA_R_16BF, n, m, n), "layout y"));
  cublasLtMatmulPreference_t preference = nullptr;
  STAMEN_RETURN_IF_ERROR(CheckBlas(cublasLtMatmulPreferenceCreate(&preference), "preference"));
  const size_t workspace = context.blas_workspace_bytes();
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof(workspace));
  cublasLtMatmulHeuristicResult_t result{};
  int found_count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(context.blas(), plan->operation, plan->weight, plan->input, plan->output,
                                     plan->output, preference, 1, &result, &found_count);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status == CUBLAS_STATUS_SUCCESS && found_count > 0) {
    plan->algorithm = result.algo;
    plan->has_algorithm = true;
  }
  Plan* raw = plan.get();
  plans.emplace(key, std::move(plan));
  return raw;
}

}  // namespace

Status Gemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
            const ops::GemmOptions& options) {
  auto context = RequireContext("gemm");
  if (!context.ok()) return context.status();
  const int64_t m = input.dim(0);
  const int64_t n = weight.dim(0);
  const int64_t k = input.dim(1);
  if (m == 0 || n == 0) return Status();
  const bool has_bias = !bias.empty();
  // What the epilogue does; anything else runs as a kernel after the gemm.
  cublasLtEpilogue_t epilogue = has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  bool activation_after = options.activation != ops::Activation::kIdentity;
  if (options.activation == ops::Activation::kRelu) {
    epilogue = has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    activation_after = false;
  } else if (options.activation == ops::Activation::kGeluTanh) {
    // cuBLASLt's GELU epilogue is the tanh approximation (gelu_new / gelu_pytorch_tanh).
    epilogue = has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    activation_after = false;
  }
  auto plan = GetPlan(**context, m, n, k, epilogue, options.accumulate);
  if (!plan.ok()) return plan.status();
  if (!(*plan)->has_algorithm || k == 0) return ReferenceGemm(input, weight, bias, output, options);
  if (has_bias) {
    const void* bias_pointer = bias.raw_data();
    STAMEN_RETURN_IF_ERROR(CheckBlas(cublasLtMatmulDescSetAttribute((*plan)->operation,
                                                                    CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer,
                                                                    sizeof(bias_pointer)),
                                     "bias pointer"));
  }
  const float alpha = 1.0f;
  const float beta = options.accumulate ? 1.0f : 0.0f;
  STAMEN_RETURN_IF_ERROR(CheckBlas(
      cublasLtMatmul((*context)->blas(), (*plan)->operation, &alpha, weight.raw_data(), (*plan)->weight,
                     input.raw_data(), (*plan)->input, &beta, output.raw_data(), (*plan)->output, output.raw_data(),
                     (*plan)->output, &(*plan)->algorithm, (*context)->blas_workspace(),
                     (*context)->blas_workspace_bytes(), (*context)->stream()),
      "matmul"));
  if (activation_after) return cuda::Activate(options.activation, output, output);
  return Status();
}

}  // namespace stamen::engine::cuda

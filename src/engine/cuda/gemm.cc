// Gemm on CUDA through cuBLASLt: bf16 operands, fp32 accumulation (CUBLAS_COMPUTE_32F), the
// bias added in the epilogue and, where cuBLASLt has the activation (ReLU, tanh-GELU), that
// too; other activations run as one elementwise kernel after. Descriptors and the heuristic's
// algorithm are cached per shape and per operand alignment class (an algorithm chosen for
// 256-byte aligned operands may need vector loads a row view's pointer cannot take: the plan's
// preference states each pointer's alignment), so a steady-state call is one cublasLtMatmul.
// If cuBLASLt still answers CUBLAS_STATUS_NOT_SUPPORTED, the plan is marked and that shape
// runs on the reference kernel. Row-major y[m, n] = x[m, k] · W[n, k]ᵀ is computed as the
// column-major yᵀ = W · xᵀ.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "engine/cuda/context.h"
#include "engine/cuda/graph_policy.h"
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

// The alignment class (PointerAlignment, bytes) of each operand: W, x, y, bias.
struct OperandAlignments {
  uint32_t weight = 256, input = 256, output = 256, bias = 256;
  auto tied() const { return std::tuple(weight, input, output, bias); }
};

// m, n, k, epilogue, accumulate, alignments (W, x, y, bias).
using PlanKey = std::tuple<int64_t, int64_t, int64_t, int, bool, std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>>;

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
                        bool accumulate, const OperandAlignments& alignments) {
  auto& plans = context.gemm_plans().plans;
  const PlanKey key{m, n, k, static_cast<int>(epilogue), accumulate, alignments.tied()};
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
  // cuBLASLt's A is our W, B is x, C and D are y (column-major view above).
  const uint32_t alignment_a = alignments.weight, alignment_b = alignments.input, alignment_cd = alignments.output;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignment_a,
                                       sizeof(alignment_a));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignment_b,
                                       sizeof(alignment_b));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignment_cd,
                                       sizeof(alignment_cd));
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignment_cd,
                                       sizeof(alignment_cd));
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
  OperandAlignments alignments{.weight = PointerAlignment(weight.raw_data()),
                               .input = PointerAlignment(input.raw_data()),
                               .output = PointerAlignment(output.raw_data()),
                               .bias = has_bias ? PointerAlignment(bias.raw_data()) : 256};
  auto plan = GetPlan(**context, m, n, k, epilogue, options.accumulate, alignments);
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
  const cublasStatus_t multiplied =
      cublasLtMatmul((*context)->blas(), (*plan)->operation, &alpha, weight.raw_data(), (*plan)->weight,
                     input.raw_data(), (*plan)->input, &beta, output.raw_data(), (*plan)->output, output.raw_data(),
                     (*plan)->output, &(*plan)->algorithm, (*context)->blas_workspace(),
                     (*context)->blas_workspace_bytes(), (*context)->stream());
  if (multiplied == CUBLAS_STATUS_NOT_SUPPORTED) {
    // This algorithm refuses these operands after all (nothing was enqueued): the reference
    // kernel from now on for this plan's shape and alignments.
    (*plan)->has_algorithm = false;
    return ReferenceGemm(input, weight, bias, output, options);
  }
  STAMEN_RETURN_IF_ERROR(CheckBlas(multiplied, "matmul"));
  if (activation_after) return cuda::Activate(options.activation, output, output);
  return Status();
}

}  // namespace stamen::engine::cuda

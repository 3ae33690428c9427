// The step's values from the last hidden state: copy, classification head, or pooling.
#include "engine/step_output.h"

#include "engine/ops/convert.h"

namespace stamen::engine {

StatusOr<Tensor> ComputeStepValues(Model& model, const ModelInput& input, const Tensor& hidden,
                                   const StepOptions& options, ops::PoolingMode pooling, int64_t hidden_size,
                                   const StepValuesBuffer& buffer) {
  const int64_t tokens = input.cu_seqlens_host.back();
  const int64_t sequences = static_cast<int64_t>(input.cu_seqlens_host.size()) - 1;
  switch (options.output) {
    case StepOutput::kTokenEmbeddings: {
      auto values = buffer({tokens, hidden.dim(1)});
      if (!values.ok()) return values.status();
      STAMEN_RETURN_IF_ERROR(ops::Convert(hidden.Rows(0, tokens), *values));
      return values;
    }
    case StepOutput::kScores: {
      auto logits = model.Classify(input, hidden);
      if (!logits.ok()) return logits.status();
      auto values = buffer(logits->shape());
      if (!values.ok()) return values.status();
      STAMEN_RETURN_IF_ERROR(ops::Convert(*logits, *values));
      return values;
    }
    case StepOutput::kEmbeddings: {
      const int64_t width = options.dimensions > 0 ? options.dimensions : hidden_size;
      auto values = buffer({sequences, width});
      if (!values.ok()) return values.status();
      STAMEN_RETURN_IF_ERROR(ops::Pool(hidden, input.cu_seqlens, pooling, *values));
      if (options.normalize) STAMEN_RETURN_IF_ERROR(ops::L2Normalize(*values, *values));
      return values;
    }
  }
  return Status::Error("unknown step output");
}

}  // namespace stamen::engine

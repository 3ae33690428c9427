// libFuzzer target: a model folder's description files. The input is cut at "\n#file#\n"
// into config.json, modules.json, 1_Pooling/config.json, config_sentence_transformers.json
// and sentence_bert_config.json (a missing part: the file is absent); the folder is read as
// the engine and gateway read it. Errors must be reported, never crash or loop.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model_folder/model_config.h"
#include "fuzz/fuzz_checks.h"
#include "fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stamen;
  static const std::string folder = fuzz::ScratchFolder() + "/model";
  static const char* const kFiles[] = {"config.json", "modules.json", "1_Pooling/config.json",
                                       "config_sentence_transformers.json", "sentence_bert_config.json"};
  constexpr std::string_view kSeparator = "\n#file#\n";
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < std::size(kFiles)) {
    const size_t at = input.find(kSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + kSeparator.size());
  }
  parts.push_back(input);
  for (size_t i = 0; i < std::size(kFiles); ++i) {
    const std::string path = folder + "/" + kFiles[i];
    if (i < parts.size()) {
      fuzz::WriteFile(path, parts[i]);
    } else {
      fuzz::RemoveFile(path);
    }
  }

  auto config = engine::ReadModelConfig(folder + "/config.json");
  if (config.ok()) {
    fuzz::Require(config->hidden_size > 0 && config->num_hidden_layers >= 0 && config->vocab_size > 0,
                  "a read config has positive shapes");
    fuzz::Require(config->head != engine::ModelHead::kSequenceClassification ||
                      static_cast<int64_t>(config->id2label.size()) == config->num_labels,
                  "a classifier has one label name per label");
  } else {
    fuzz::Require(!config.status().message().empty(), "a config error has a message");
  }
  auto sentence_transformers = engine::ReadSentenceTransformersConfig(folder);
  if (sentence_transformers.ok()) {
    const auto& st = *sentence_transformers;
    fuzz::Require(st.default_prompt_name.empty() || st.prompts.count(st.default_prompt_name) == 1,
                  "the default prompt is one of the prompts");
  } else {
    fuzz::Require(!sentence_transformers.status().message().empty(), "a sentence-transformers error has a message");
  }
  return 0;
}

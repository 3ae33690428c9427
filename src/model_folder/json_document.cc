// simdjson DOM access with error messages for config files.
#include "model_folder/json_document.h"

namespace stamen::engine {

bool JsonObject::Has(std::string_view key) const {
  simdjson::dom::element element;
  return object_[key].get(element) == simdjson::SUCCESS && !element.is_null();
}

Status JsonObject::Error(std::string_view key, std::string_view problem) const {
  return Status::Error(file_ + ": key '" + std::string(key) + "' " + std::string(problem));
}

Status JsonObject::Optional(std::string_view key, int64_t* value) const {
  if (!Has(key)) return Status();
  if (object_[key].get(*value) != simdjson::SUCCESS) return Error(key, "must be an integer");
  return Status();
}

Status JsonObject::Optional(std::string_view key, double* value) const {
  if (!Has(key)) return Status();
  if (object_[key].get(*value) != simdjson::SUCCESS) return Error(key, "must be a number");
  return Status();
}

Status JsonObject::Optional(std::string_view key, bool* value) const {
  if (!Has(key)) return Status();
  if (object_[key].get(*value) != simdjson::SUCCESS) return Error(key, "must be true or false");
  return Status();
}

Status JsonObject::Optional(std::string_view key, std::string* value) const {
  if (!Has(key)) return Status();
  std::string_view text;
  if (object_[key].get(text) != simdjson::SUCCESS) return Error(key, "must be a string");
  *value = std::string(text);
  return Status();
}

Status JsonObject::OptionalObject(std::string_view key, JsonObject* value, bool* found) const {
  *found = false;
  if (!Has(key)) return Status();
  simdjson::dom::object object;
  if (object_[key].get(object) != simdjson::SUCCESS) return Error(key, "must be an object");
  *value = JsonObject(file_, object);
  *found = true;
  return Status();
}

StatusOr<std::unique_ptr<JsonDocument>> JsonDocument::Load(const std::string& path) {
  auto document = std::make_unique<JsonDocument>();
  document->path_ = path;
  simdjson::padded_string json;
  if (simdjson::padded_string::load(path).get(json) != simdjson::SUCCESS) {
    return Status::Error("cannot read " + path);
  }
  simdjson::dom::element root;
  if (auto error = document->parser_.parse(json).get(root); error != simdjson::SUCCESS) {
    return Status::Error(path + ": not valid JSON: " + simdjson::error_message(error));
  }
  if (root.get(document->root_) != simdjson::SUCCESS) return Status::Error(path + ": not a JSON object");
  return document;
}

}  // namespace stamen::engine

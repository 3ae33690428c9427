// A pickle machine restricted to what torch.save writes for a state dict of tensors, and the
// tensors it describes, copied out of the archive's storage entries.
#include "engine/torch_file.h"

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <utility>

#include "engine/ops/convert.h"
#include "engine/zip_archive.h"

namespace stamen::engine {
namespace {

// The globals a state dict may name; nothing else is ever looked up.
enum class Callable { kOrderedDict, kRebuildTensor, kRebuildParameter, kStorageType };

struct StorageType {
  std::string_view name;
  DataType dtype;
};
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", DataType::kF32}, {"HalfStorage", DataType::kF16}, {"BFloat16Storage", DataType::kBF16}};

// A tensor as the pickle describes it, before its bytes are copied.
struct TensorRecipe {
  DataType dtype = DataType::kF32;
  std::string storage_key;
  int64_t storage_elements = 0;
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
};

struct Value;
using ValuePointer = std::shared_ptr<Value>;

// One value of the machine's stack or memo. Containers hold shared pointers, so that a dict
// memoized before its items are set (as pickle does) is the same dict everywhere.
struct Value {
  enum class Kind { kMark, kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kCallable, kStorage, kTensor };
  Kind kind = Kind::kNone;
  int64_t integer = 0;
  double number = 0.0;
  std::string text;                  // kString; kCallable: the global's name, for messages
  std::vector<ValuePointer> items;   // kTuple, kList
  std::vector<std::pair<ValuePointer, ValuePointer>> entries;  // kDict, in insertion order
  Callable callable = Callable::kOrderedDict;
  TensorRecipe tensor;  // kStorage (dtype, key, elements) and kTensor
  // Containers: how deeply values nest inside this one, and whether it sits inside another. A dict
  // or list is only changed while inside none, so no value can come to hold itself (a cycle of
  // shared pointers would never be freed), and nesting is bounded (freeing recurses).
  int depth = 0;
  bool contained = false;
};

// Far deeper than a state dict's tuples of tuples (4).
constexpr int kMaxDepth = 64;

std::string_view KindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kMark: return "a mark";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return "a bool";
    case Value::Kind::kInt: return "an int";
    case Value::Kind::kFloat: return "a float";
    case Value::Kind::kString: return "a string";
    case Value::Kind::kTuple: return "a tuple";
    case Value::Kind::kList: return "a list";
    case Value::Kind::kDict: return "a dict";
    case Value::Kind::kCallable: return "a class or function";
    case Value::Kind::kStorage: return "a storage";
    case Value::Kind::kTensor: return "a tensor";
  }
  return "a value";
}

ValuePointer Make(Value::Kind kind) {
  auto value = std::make_shared<Value>();
  value->kind = kind;
  return value;
}

class PickleMachine {
 public:
  PickleMachine(std::span<const std::byte> bytes, std::string where) : bytes_(bytes), where_(std::move(where)) {}

  // Runs to STOP and returns the value left on the stack.
  StatusOr<ValuePointer> Run();

 private:
  Status Fail(const std::string& what) const {
    return Status::Error(where_ + ": " + what + " (pickle byte " + std::to_string(position_) + ")");
  }
  bool Take(size_t count, const std::byte** out) {
    if (count > bytes_.size() - position_) return false;
    *out = bytes_.data() + position_;
    position_ += count;
    return true;
  }
  StatusOr<uint64_t> TakeUnsigned(size_t width);
  StatusOr<std::string> TakeLine();
  StatusOr<ValuePointer> Pop();
  StatusOr<std::vector<ValuePointer>> PopToMark();
  Status Global();
  Status Reduce();
  Status PersistentId();
  Status Build();
  Status SetItems(std::vector<ValuePointer> pairs);
  Status Memo(uint64_t index);
  // Puts `item` into `container` (whose depth it may raise); refuses a container inside another.
  Status Nest(Value& container, const ValuePointer& item);

  std::span<const std::byte> bytes_;
  std::string where_;
  size_t position_ = 0;
  std::vector<ValuePointer> stack_;
  std::vector<ValuePointer> memo_;
};

StatusOr<uint64_t> PickleMachine::TakeUnsigned(size_t width) {
  const std::byte* field = nullptr;
  if (!Take(width, &field)) return Fail("the pickle ends inside an argument");
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= uint64_t(std::to_integer<uint8_t>(field[i])) << (8 * i);
  return value;
}

StatusOr<std::string> PickleMachine::TakeLine() {
  std::string line;
  while (position_ < bytes_.size()) {
    const char c = static_cast<char>(bytes_[position_++]);
    if (c == '\n') return line;
    line.push_back(c);
  }
  return Fail("the pickle ends inside a global's name");
}

StatusOr<ValuePointer> PickleMachine::Pop() {
  if (stack_.empty() || stack_.back()->kind == Value::Kind::kMark) return Fail("the stack is empty");
  ValuePointer value = std::move(stack_.back());
  stack_.pop_back();
  return value;
}

StatusOr<std::vector<ValuePointer>> PickleMachine::PopToMark() {
  size_t mark = stack_.size();
  while (mark > 0 && stack_[mark - 1]->kind != Value::Kind::kMark) --mark;
  if (mark == 0) return Fail("no mark on the stack");
  std::vector<ValuePointer> items(stack_.begin() + mark, stack_.end());
  stack_.resize(mark - 1);
  return items;
}

Status PickleMachine::Memo(uint64_t index) {
  if (stack_.empty()) return Fail("memoizing an empty stack");
  if (index > memo_.size() + 1'000'000) return Fail("memo index " + std::to_string(index) + " is out of range");
  if (memo_.size() <= index) memo_.resize(index + 1);
  memo_[index] = stack_.back();
  return Status();
}

Status PickleMachine::Nest(Value& container, const ValuePointer& item) {
  if (container.contained) return Fail("changes a dict or list that is already inside another value");
  // Uncontained, the container can be inside the item only if it is the item.
  if (&container == item.get()) return Fail("puts a value inside itself");
  if (item->depth + 1 > kMaxDepth) return Fail("values nest more than " + std::to_string(kMaxDepth) + " deep");
  container.depth = std::max(container.depth, item->depth + 1);
  item->contained = true;
  return Status();
}

Status PickleMachine::Global() {
  auto module = TakeLine();
  if (!module.ok()) return module.status();
  auto name = TakeLine();
  if (!name.ok()) return name.status();
  auto value = Make(Value::Kind::kCallable);
  value->text = *module + "." + *name;
  if (*module == "collections" && *name == "OrderedDict") {
    value->callable = Callable::kOrderedDict;
  } else if (*module == "torch._utils" && *name == "_rebuild_tensor_v2") {
    value->callable = Callable::kRebuildTensor;
  } else if (*module == "torch._utils" && *name == "_rebuild_parameter") {
    value->callable = Callable::kRebuildParameter;
  } else {
    bool storage = false;
    for (const StorageType& type : kStorageTypes) {
      if (*module == "torch" && *name == type.name) {
        value->callable = Callable::kStorageType;
        value->tensor.dtype = type.dtype;
        storage = true;
      }
    }
    if (!storage) {
      return Fail("refuses the pickled global '" + value->text +
                  "': only a state dict of F32, F16 or BF16 tensors is read (collections.OrderedDict, "
                  "torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter, torch.FloatStorage, "
                  "torch.HalfStorage, torch.BFloat16Storage), and nothing in it is executed");
    }
  }
  stack_.push_back(std::move(value));
  return Status();
}

// The integers of a tuple of ints (a tensor's size or stride).
bool IntTuple(const Value& value, std::vector<int64_t>* out) {
  if (value.kind != Value::Kind::kTuple) return false;
  for (const ValuePointer& item : value.items) {
    if (item->kind != Value::Kind::kInt) return false;
    out->push_back(item->integer);
  }
  return true;
}

Status PickleMachine::Reduce() {
  auto arguments = Pop();
  if (!arguments.ok()) return arguments.status();
  auto callable = Pop();
  if (!callable.ok()) return callable.status();
  if ((*callable)->kind != Value::Kind::kCallable || (*arguments)->kind != Value::Kind::kTuple) {
    return Fail("REDUCE of " + std::string(KindName((*callable)->kind)) + " with " +
                std::string(KindName((*arguments)->kind)));
  }
  const std::vector<ValuePointer>& args = (*arguments)->items;
  switch ((*callable)->callable) {
    case Callable::kOrderedDict:
      if (!args.empty()) return Fail("collections.OrderedDict called with arguments");
      stack_.push_back(Make(Value::Kind::kDict));
      return Status();
    case Callable::kRebuildParameter:
      // (data, requires_grad, backward_hooks): the parameter's tensor.
      if (args.empty() || args[0]->kind != Value::Kind::kTensor) return Fail("_rebuild_parameter of no tensor");
      stack_.push_back(args[0]);
      return Status();
    case Callable::kRebuildTensor: {
      // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata]).
      if (args.size() < 4 || args[0]->kind != Value::Kind::kStorage || args[1]->kind != Value::Kind::kInt) {
        return Fail("_rebuild_tensor_v2 with unexpected arguments");
      }
      auto tensor = Make(Value::Kind::kTensor);
      tensor->tensor = args[0]->tensor;
      tensor->tensor.offset = args[1]->integer;
      if (!IntTuple(*args[2], &tensor->tensor.size) || !IntTuple(*args[3], &tensor->tensor.stride) ||
          tensor->tensor.size.size() != tensor->tensor.stride.size()) {
        return Fail("_rebuild_tensor_v2 with a malformed size or stride");
      }
      stack_.push_back(std::move(tensor));
      return Status();
    }
    case Callable::kStorageType:
      return Fail("a storage type called as a function");
  }
  return Fail("unknown callable");
}

// torch.save's persistent id of a storage: ('storage', storage type, key, location, elements).
Status PickleMachine::PersistentId() {
  auto id = Pop();
  if (!id.ok()) return id.status();
  const std::vector<ValuePointer>& fields = (*id)->items;
  const bool well_formed = (*id)->kind == Value::Kind::kTuple && fields.size() == 5 &&
                           fields[0]->kind == Value::Kind::kString && fields[0]->text == "storage" &&
                           fields[1]->kind == Value::Kind::kCallable && fields[1]->callable == Callable::kStorageType &&
                           fields[2]->kind == Value::Kind::kString && fields[4]->kind == Value::Kind::kInt &&
                           fields[4]->integer >= 0;
  if (!well_formed) return Fail("a persistent id that is not a storage of torch.save");
  auto storage = Make(Value::Kind::kStorage);
  storage->tensor.dtype = fields[1]->tensor.dtype;
  storage->tensor.storage_key = fields[2]->text;
  storage->tensor.storage_elements = fields[4]->integer;
  stack_.push_back(std::move(storage));
  return Status();
}

// BUILD sets an object's state: a state dict carries its _metadata (versions of its modules)
// that way, which the tensors do not need.
Status PickleMachine::Build() {
  auto state = Pop();
  if (!state.ok()) return state.status();
  if (stack_.empty() || stack_.back()->kind != Value::Kind::kDict) return Fail("BUILD of an object that is not a dict");
  return Status();
}

Status PickleMachine::SetItems(std::vector<ValuePointer> pairs) {
  if (pairs.size() % 2 != 0) return Fail("SETITEMS with an odd number of values");
  if (stack_.empty() || stack_.back()->kind != Value::Kind::kDict) return Fail("SETITEMS on something that is not a dict");
  Value& dict = *stack_.back();
  for (size_t i = 0; i < pairs.size(); i += 2) {
    STAMEN_RETURN_IF_ERROR(Nest(dict, pairs[i]));
    STAMEN_RETURN_IF_ERROR(Nest(dict, pairs[i + 1]));
    dict.entries.emplace_back(pairs[i], pairs[i + 1]);
  }
  return Status();
}

StatusOr<ValuePointer> PickleMachine::Run() {
  while (position_ < bytes_.size()) {
    const uint8_t opcode = std::to_integer<uint8_t>(bytes_[position_++]);
    Status status;
    switch (opcode) {
      case 0x80: {  // PROTO
        auto version = TakeUnsigned(1);
        if (!version.ok()) return version.status();
        break;
      }
      case 0x95: {  // FRAME (protocol 4): a length hint only
        auto length = TakeUnsigned(8);
        if (!length.ok()) return length.status();
        break;
      }
      case '.':  // STOP
        if (stack_.size() != 1) return Fail("STOP with " + std::to_string(stack_.size()) + " values on the stack");
        return stack_.back();
      case '(': stack_.push_back(Make(Value::Kind::kMark)); break;
      case '}': stack_.push_back(Make(Value::Kind::kDict)); break;
      case ']': stack_.push_back(Make(Value::Kind::kList)); break;
      case ')': stack_.push_back(Make(Value::Kind::kTuple)); break;
      case 'N': stack_.push_back(Make(Value::Kind::kNone)); break;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        auto value = Make(Value::Kind::kBool);
        value->integer = opcode == 0x88;
        stack_.push_back(std::move(value));
        break;
      }
      case 'K':
      case 'M':
      case 'J': {  // BININT1, BININT2, BININT (signed)
        const size_t width = opcode == 'K' ? 1 : opcode == 'M' ? 2 : 4;
        auto raw = TakeUnsigned(width);
        if (!raw.ok()) return raw.status();
        auto value = Make(Value::Kind::kInt);
        value->integer = opcode == 'J' ? int64_t(int32_t(uint32_t(*raw))) : int64_t(*raw);
        stack_.push_back(std::move(value));
        break;
      }
      case 0x8a: {  // LONG1: n little-endian two's complement bytes
        auto length = TakeUnsigned(1);
        if (!length.ok()) return length.status();
        if (*length > 8) return Fail("an integer of " + std::to_string(*length) + " bytes");
        auto raw = TakeUnsigned(*length);
        if (!raw.ok()) return raw.status();
        auto value = Make(Value::Kind::kInt);
        uint64_t bits = *raw;
        if (*length > 0 && *length < 8 && (bits >> (8 * *length - 1)) & 1) bits |= ~uint64_t{0} << (8 * *length);
        value->integer = static_cast<int64_t>(bits);
        stack_.push_back(std::move(value));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double
        const std::byte* field = nullptr;
        if (!Take(8, &field)) return Fail("the pickle ends inside a float");
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | std::to_integer<uint8_t>(field[i]);
        auto value = Make(Value::Kind::kFloat);
        std::memcpy(&value->number, &bits, sizeof bits);
        stack_.push_back(std::move(value));
        break;
      }
      case 'X':
      case 0x8c: {  // BINUNICODE, SHORT_BINUNICODE
        auto length = TakeUnsigned(opcode == 'X' ? 4 : 1);
        if (!length.ok()) return length.status();
        const std::byte* text = nullptr;
        if (!Take(*length, &text)) return Fail("the pickle ends inside a string");
        auto value = Make(Value::Kind::kString);
        value->text.assign(reinterpret_cast<const char*>(text), *length);
        stack_.push_back(std::move(value));
        break;
      }
      case 't':
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE (to the mark), TUPLE1, TUPLE2, TUPLE3
        auto tuple = Make(Value::Kind::kTuple);
        if (opcode == 't') {
          auto items = PopToMark();
          if (!items.ok()) return items.status();
          tuple->items = std::move(items.value());
        } else {
          const size_t count = opcode - 0x84;
          if (stack_.size() < count) return Fail("a tuple of more values than the stack holds");
          tuple->items.assign(stack_.end() - count, stack_.end());
          stack_.resize(stack_.size() - count);
          for (const ValuePointer& item : tuple->items) {
            if (item->kind == Value::Kind::kMark) return Fail("a mark inside a tuple");
          }
        }
        for (const ValuePointer& item : tuple->items) STAMEN_RETURN_IF_ERROR(Nest(*tuple, item));
        stack_.push_back(std::move(tuple));
        break;
      }
      case 'q':
      case 'r': {  // BINPUT, LONG_BINPUT
        auto index = TakeUnsigned(opcode == 'q' ? 1 : 4);
        if (!index.ok()) return index.status();
        status = Memo(*index);
        break;
      }
      case 0x94: status = Memo(memo_.size()); break;  // MEMOIZE (protocol 4)
      case 'h':
      case 'j': {  // BINGET, LONG_BINGET
        auto index = TakeUnsigned(opcode == 'h' ? 1 : 4);
        if (!index.ok()) return index.status();
        if (*index >= memo_.size() || memo_[*index] == nullptr) return Fail("memo " + std::to_string(*index) + " is unset");
        stack_.push_back(memo_[*index]);
        break;
      }
      case 'c': status = Global(); break;
      case 'R': status = Reduce(); break;
      case 'Q': status = PersistentId(); break;
      case 'b': status = Build(); break;
      case 's': {  // SETITEM
        auto value = Pop();
        if (!value.ok()) return value.status();
        auto key = Pop();
        if (!key.ok()) return key.status();
        status = SetItems({*key, *value});
        break;
      }
      case 'u': {  // SETITEMS
        auto pairs = PopToMark();
        if (!pairs.ok()) return pairs.status();
        status = SetItems(std::move(pairs.value()));
        break;
      }
      case 'a': {  // APPEND
        auto value = Pop();
        if (!value.ok()) return value.status();
        if (stack_.empty() || stack_.back()->kind != Value::Kind::kList) return Fail("APPEND to something that is not a list");
        STAMEN_RETURN_IF_ERROR(Nest(*stack_.back(), *value));
        stack_.back()->items.push_back(*value);
        break;
      }
      case 'e': {  // APPENDS
        auto items = PopToMark();
        if (!items.ok()) return items.status();
        if (stack_.empty() || stack_.back()->kind != Value::Kind::kList) return Fail("APPENDS to something that is not a list");
        for (ValuePointer& item : *items) {
          STAMEN_RETURN_IF_ERROR(Nest(*stack_.back(), item));
          stack_.back()->items.push_back(std::move(item));
        }
        break;
      }
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", opcode);
        return Fail(std::string("refuses pickle opcode ") + hex + ": not one a state dict of tensors needs");
      }
    }
    if (!status.ok()) return status;
  }
  return Fail("the pickle ends without STOP");
}

// A contiguous F32 copy of the tensor `recipe` describes, from its storage's bytes.
StatusOr<Tensor> Materialize(const TensorRecipe& recipe, std::span<const std::byte> storage, const std::string& where) {
  const size_t element = ElementSize(recipe.dtype);
  const int64_t elements = recipe.storage_elements;
  if (static_cast<uint64_t>(elements) > storage.size() / element) {
    return Status::Error(where + ": its storage has " + std::to_string(storage.size()) + " bytes for " +
                         std::to_string(elements) + " elements");
  }
  auto shape = Shape::FromDims(recipe.size);
  if (!shape.ok()) return Status::Error(where + ": " + shape.status().message());
  // Every element it reads must lie inside the storage, and it may not read more elements than
  // the storage holds (a broadcast view, which no state dict saves); checked without overflow.
  const auto outside = [&] {
    return Status::Error(where + " reads outside its storage of " + std::to_string(elements) + " elements");
  };
  if (recipe.offset < 0 || recipe.offset > elements) return outside();
  int64_t last = recipe.offset, count = 1;
  for (size_t axis = 0; axis < recipe.size.size(); ++axis) {
    const int64_t size = recipe.size[axis], stride = recipe.stride[axis];
    if (stride < 0) return Status::Error(where + " has a negative stride");
    if (size == 0) {
      count = 0;
      break;
    }
    if (size > elements || count > elements / size) return outside();
    count *= size;
    if (stride > 0 && size - 1 > (elements - last) / stride) return outside();
    last += (size - 1) * stride;
  }
  if (count > 0 && last >= elements) return outside();
  auto gathered = Tensor::Allocate(recipe.dtype, *shape);
  if (!gathered.ok()) return gathered.status();
  auto* out = static_cast<std::byte*>(gathered->raw_data());
  const int rank = static_cast<int>(recipe.size.size());
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t source = recipe.offset;
    for (int axis = 0; axis < rank; ++axis) source += index[axis] * recipe.stride[axis];
    std::memcpy(out + i * element, storage.data() + source * element, element);
    for (int axis = rank - 1; axis >= 0; --axis) {
      if (++index[axis] < recipe.size[axis]) break;
      index[axis] = 0;
    }
  }
  if (recipe.dtype == DataType::kF32) return gathered;
  auto converted = Tensor::Allocate(DataType::kF32, *shape);
  if (!converted.ok()) return converted.status();
  STAMEN_RETURN_IF_ERROR(ops::Convert(*gathered, *converted));
  return converted;
}

}  // namespace

StatusOr<TorchStateDict> TorchStateDict::Open(const std::string& path) {
  auto archive = ZipArchive::Open(path);
  if (!archive.ok()) return archive.status();
  // The archive's one folder is named by torch.save (the file's stem, or "archive").
  std::string prefix;
  for (const std::string& name : archive->Names()) {
    const size_t slash = name.find('/');
    if (slash != std::string::npos && name.substr(slash + 1) == "data.pkl") prefix = name.substr(0, slash + 1);
  }
  if (prefix.empty()) return Status::Error(path + ": not a torch.save file: no <name>/data.pkl entry");
  if (archive->Contains(prefix + "byteorder")) {
    auto order = archive->Read(prefix + "byteorder");
    if (!order.ok()) return order.status();
    const std::string_view text(reinterpret_cast<const char*>(order->data()), order->size());
    if (text != "little") return Status::Error(path + ": its tensors are stored " + std::string(text) + "-endian; only little-endian is read");
  }
  auto pickle = archive->Read(prefix + "data.pkl");
  if (!pickle.ok()) return pickle.status();
  PickleMachine machine(*pickle, path);
  auto root = machine.Run();
  if (!root.ok()) return root.status();
  if ((*root)->kind != Value::Kind::kDict) {
    return Status::Error(path + ": holds " + std::string(KindName((*root)->kind)) + ", not a state dict of tensors");
  }
  TorchStateDict state;
  state.path_ = path;
  for (const auto& [key, value] : (*root)->entries) {
    if (key->kind != Value::Kind::kString) return Status::Error(path + ": a state dict key is " + std::string(KindName(key->kind)));
    const std::string where = path + ": '" + key->text + "'";
    if (value->kind != Value::Kind::kTensor) {
      return Status::Error(where + " holds " + std::string(KindName(value->kind)) + ", not a tensor");
    }
    auto storage = archive->Read(prefix + "data/" + value->tensor.storage_key);
    if (!storage.ok()) return storage.status();
    auto tensor = Materialize(value->tensor, *storage, where);
    if (!tensor.ok()) return tensor.status();
    state.tensors_[key->text] = std::move(tensor.value());
  }
  return state;
}

std::vector<std::string> TorchStateDict::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors_) names.push_back(name);
  return names;
}

StatusOr<Tensor> TorchStateDict::Get(std::string_view name) const {
  const auto found = tensors_.find(name);
  if (found == tensors_.end()) return Status::Error(path_ + ": no tensor '" + std::string(name) + "'");
  return found->second;
}

StatusOr<Tensor> TorchStateDict::Get(std::string_view name, const Shape& expected) const {
  auto tensor = Get(name);
  if (!tensor.ok()) return tensor.status();
  if (!(tensor->shape() == expected)) {
    return Status::Error(path_ + ": tensor '" + std::string(name) + "' has shape " + tensor->shape().ToString() +
                         ", expected " + expected.ToString());
  }
  return tensor;
}

}  // namespace stamen::engine

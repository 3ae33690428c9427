// Zip archives' central directory and stored entries (APPNOTE.TXT 4.3), read from a mapping.
#include "engine/zip_archive.h"

#include <algorithm>
#include <cstring>

namespace stamen::engine {
namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kCentralDirectoryHeader = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr size_t kEndRecordBytes = 22;
constexpr size_t kLocatorBytes = 20;
constexpr size_t kZip64EndRecordBytes = 56;
constexpr size_t kCentralHeaderBytes = 46;
constexpr size_t kLocalHeaderBytes = 30;
constexpr uint16_t kZip64ExtraField = 0x0001;

// Little-endian fields at `offset` of `bytes` (the caller has checked the bounds).
uint64_t ReadLittleEndian(const std::byte* bytes, size_t offset, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= uint64_t(std::to_integer<uint8_t>(bytes[offset + i])) << (8 * i);
  return value;
}

}  // namespace

StatusOr<ZipArchive> ZipArchive::Open(const std::string& path) {
  auto mapped = MappedFile::Open(path);
  if (!mapped.ok()) return mapped.status();
  ZipArchive archive;
  archive.file_ = std::move(mapped.value());
  STAMEN_RETURN_IF_ERROR(archive.ReadCentralDirectory());
  return archive;
}

Status ZipArchive::ReadCentralDirectory() {
  const std::byte* data = file_->data();
  const size_t size = file_->size();
  const auto broken = [&](const std::string& what) { return Status::Error(path() + ": not a readable zip archive: " + what); };
  if (size < kEndRecordBytes) return broken("shorter than an end-of-central-directory record");
  // The end record is the last one in the file, followed by a comment of at most 65,535 bytes.
  size_t end_record = std::string::npos;
  const size_t earliest = size > kEndRecordBytes + 65535 ? size - kEndRecordBytes - 65535 : 0;
  for (size_t at = size - kEndRecordBytes + 1; at-- > earliest;) {
    if (ReadLittleEndian(data, at, 4) == kEndOfCentralDirectory &&
        at + kEndRecordBytes + ReadLittleEndian(data, at + 20, 2) == size) {
      end_record = at;
      break;
    }
  }
  if (end_record == std::string::npos) return broken("no end-of-central-directory record");
  uint64_t entries = ReadLittleEndian(data, end_record + 10, 2);
  uint64_t directory_size = ReadLittleEndian(data, end_record + 12, 4);
  uint64_t directory_offset = ReadLittleEndian(data, end_record + 16, 4);
  // Zip64: a locator just before the end record points to the 64-bit end record.
  if (end_record >= kLocatorBytes && ReadLittleEndian(data, end_record - kLocatorBytes, 4) == kZip64Locator) {
    const uint64_t zip64_record = ReadLittleEndian(data, end_record - kLocatorBytes + 8, 8);
    if (size < kZip64EndRecordBytes || zip64_record > size - kZip64EndRecordBytes ||
        ReadLittleEndian(data, zip64_record, 4) != kZip64EndOfCentralDirectory) {
      return broken("the zip64 end-of-central-directory locator points outside the file");
    }
    entries = ReadLittleEndian(data, zip64_record + 32, 8);
    directory_size = ReadLittleEndian(data, zip64_record + 40, 8);
    directory_offset = ReadLittleEndian(data, zip64_record + 48, 8);
  }
  if (directory_offset > size || directory_size > size - directory_offset) {
    return broken("the central directory lies outside the file");
  }
  size_t at = directory_offset;
  const size_t directory_end = directory_offset + directory_size;
  for (uint64_t i = 0; i < entries; ++i) {
    if (at + kCentralHeaderBytes > directory_end || ReadLittleEndian(data, at, 4) != kCentralDirectoryHeader) {
      return broken("central directory entry " + std::to_string(i) + " is malformed");
    }
    const uint16_t flags = ReadLittleEndian(data, at + 8, 2);
    Entry entry;
    entry.method = ReadLittleEndian(data, at + 10, 2);
    entry.compressed_size = ReadLittleEndian(data, at + 20, 4);
    entry.size = ReadLittleEndian(data, at + 24, 4);
    const size_t name_length = ReadLittleEndian(data, at + 28, 2);
    const size_t extra_length = ReadLittleEndian(data, at + 30, 2);
    const size_t comment_length = ReadLittleEndian(data, at + 32, 2);
    entry.local_header = ReadLittleEndian(data, at + 42, 4);
    const size_t name_at = at + kCentralHeaderBytes;
    if (name_at + name_length + extra_length + comment_length > directory_end) {
      return broken("central directory entry " + std::to_string(i) + " runs past the directory");
    }
    std::string name(reinterpret_cast<const char*>(data + name_at), name_length);
    if ((flags & 1) != 0) return Status::Error(path() + ": entry '" + name + "' is encrypted");
    // The zip64 extra field holds, in this order, each 32-bit field that was saturated.
    for (size_t extra = name_at + name_length; extra + 4 <= name_at + name_length + extra_length;) {
      const uint16_t id = ReadLittleEndian(data, extra, 2);
      const size_t length = ReadLittleEndian(data, extra + 2, 2);
      if (extra + 4 + length > name_at + name_length + extra_length) return broken("entry '" + name + "' has a malformed extra field");
      if (id == kZip64ExtraField) {
        size_t field = extra + 4;
        const auto take = [&](uint64_t* value) {
          if (*value != 0xFFFFFFFFu) return true;
          if (field + 8 > extra + 4 + length) return false;
          *value = ReadLittleEndian(data, field, 8);
          field += 8;
          return true;
        };
        if (!take(&entry.size) || !take(&entry.compressed_size) || !take(&entry.local_header)) {
          return broken("entry '" + name + "' has a short zip64 extra field");
        }
      }
      extra += 4 + length;
    }
    if (entry.local_header > size - kLocalHeaderBytes || size < kLocalHeaderBytes) {
      return broken("entry '" + name + "' starts outside the file");
    }
    entries_[std::move(name)] = entry;
    at = name_at + name_length + extra_length + comment_length;
  }
  return Status();
}

std::vector<std::string> ZipArchive::Names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

StatusOr<std::span<const std::byte>> ZipArchive::Read(std::string_view name) const {
  const auto found = entries_.find(name);
  if (found == entries_.end()) return Status::Error(path() + ": no entry '" + std::string(name) + "'");
  const Entry& entry = found->second;
  const std::string where = path() + ": entry '" + std::string(name) + "'";
  if (entry.method != 0) {
    return Status::Error(where + " is compressed (method " + std::to_string(entry.method) +
                         "); only stored entries are read, as torch.save writes them");
  }
  const std::byte* data = file_->data();
  const size_t size = file_->size();
  if (ReadLittleEndian(data, entry.local_header, 4) != kLocalHeader) return Status::Error(where + " has no local header");
  const uint64_t start = entry.local_header + kLocalHeaderBytes + ReadLittleEndian(data, entry.local_header + 26, 2) +
                         ReadLittleEndian(data, entry.local_header + 28, 2);
  if (entry.compressed_size != entry.size || start > size || entry.size > size - start) {
    return Status::Error(where + " runs past the end of the file");
  }
  return std::span<const std::byte>(data + start, entry.size);
}

}  // namespace stamen::engine

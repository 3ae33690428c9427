// What tests that write files or run the `stamen` binary share: a temporary folder removed
// with everything in it at the end of its scope, reading a whole file, and running a shell
// command with stdin and capturing its exit code, stdout and stderr.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace stamen::test {

// A new folder under the system's temporary one, named `<prefix>_XXXXXX`.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "stamen_test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

// The bytes of `path`, or "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

struct Result {
  int code = -1;  // the exit code, -1 when it did not exit
  std::string out, err;
};

// Runs the shell command `command` with `input` on stdin.
inline Result RunCommand(const std::string& command, const std::string& input) {
  TempDir io;
  std::ofstream(io.File("in"), std::ios::binary) << input;
  const std::string line =
      command + " < '" + io.File("in") + "' > '" + io.File("out") + "' 2> '" + io.File("err") + "'";
  const int status = std::system(line.c_str());
  Result result;
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadFile(io.File("out"));
  result.err = ReadFile(io.File("err"));
  return result;
}

}  // namespace stamen::test

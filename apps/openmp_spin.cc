// Why: libgomp's idle threads spin 300,000 times (several hundred microseconds) before they
// sleep, which assumes the threads own their cores. On the 2-core development VM, with one
// other busy thread (the gateway tokenizing, an HTTP thread, another process), a 2-thread
// engine step of all-MiniLM-L6-v2 at 128 tokens took 420 ms instead of 42 ms: the spinning
// threads take the CPU from the ones with work (docs/BENCHMARKS.md, "OpenMP spinning"). A short
// spin removes that cliff; the user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
#include "openmp_spin.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace stamen::apps {
namespace {

constexpr const char* kShortSpin = "1000";

// The subcommands that run the engine in this process (the gateway only tokenizes).
bool RunsTheEngine(int argc, char** argv) {
  if (argc < 2) return false;
  const char* command = argv[1];
  for (const char* name : {"serve", "worker", "embed", "rerank"}) {
    if (std::strcmp(command, name) == 0) return true;
  }
  // `stamen bench engine|worker|gateway|knee|serve` run the engine in process too.
  return std::strcmp(command, "bench") == 0 && argc >= 3 && std::strncmp(argv[2], "tokenizer", 9) != 0;
}

}  // namespace

void ReexecWithShortOpenMpSpin(int argc, char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (!RunsTheEngine(argc, argv)) return;
  setenv("GOMP_SPINCOUNT", kShortSpin, /*overwrite=*/0);
  execv("/proc/self/exe", argv);
  // Not fatal: the program runs on with libgomp's default spin.
  std::fprintf(stderr, "stamen: could not re-execute with GOMP_SPINCOUNT=%s: %s\n", kShortSpin, std::strerror(errno));
}

}  // namespace stamen::apps

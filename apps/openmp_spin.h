// The spin of idle OpenMP threads for the commands that run the engine (openmp_spin.cc).
#pragma once

namespace stamen::apps {

// When neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set and `argv` names a command that runs
// the engine, sets a short GOMP_SPINCOUNT and re-executes this program with it (libgomp reads
// its environment only when it is loaded, before main()). Returns only when no re-execution is
// needed or it failed.
void ReexecWithShortOpenMpSpin(int argc, char** argv);

}  // namespace stamen::apps

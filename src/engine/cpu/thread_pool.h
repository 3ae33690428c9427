// The threads of stamen's own CPU kernels (the small-m GEMM, attention, norms): a parallel
// loop whose tasks are claimed one at a time, by the calling thread and by workers that wait
// for the next loop by spinning a while, then sleeping. oneDNN keeps OpenMP's threads.
//
// Why not OpenMP: a step of a short input is ~30 loops of tens of microseconds with short
// serial gaps between them. libgomp splits a loop statically and its idle threads sleep after
// GOMP_SPINCOUNT spins; the engine commands run with a short spin (apps/openmp_spin.cc), since
// a long one is ten times slower as soon as another thread wants a core. The short spin put a
// worker to sleep ~20 times per 16-token step, and every loop then waited for its static half
// to be woken: all-MiniLM-L6-v2 at 16 tokens, batch 1, took 2.4 ms instead of 1.5 ms
// (docs/BENCHMARKS.md, "A thread pool for short steps"). Here:
//   - the caller starts on the tasks at once and never waits for a task nobody has claimed,
//     so a sleeping or descheduled worker slows a loop by at most the task it holds;
//   - a worker spins through the gaps of a step (kSpin) before it sleeps, and sleeps at once
//     when the engine hands the cores to oneDNN (ParkWorkers), so the two pools do not compete.
#pragma once

#include <cstdint>
#include <utility>

namespace stamen::engine::cpu {

// The threads a loop may use: the calling thread's OpenMP thread count (Engine::Step sets it).
int LoopThreads();

namespace internal {
using TaskFunction = void (*)(const void* body, int64_t task);
// Runs task(body, i) for i in [0, count) across the pool; see ParallelFor.
void RunParallel(int64_t count, int threads, TaskFunction task, const void* body);
}  // namespace internal

// Calls body(i) for every i in [0, count), each once, spread over up to `threads` threads (the
// caller's LoopThreads() by default; 1 for a loop too small to be worth threads), the calling thread among them; returns when all
// have returned. Runs serially for one task, one thread, or when called from inside a task, an
// OpenMP region, or while another thread's loop holds the pool. body must not throw.
template <typename Body>
void ParallelFor(int64_t count, const Body& body, int threads = LoopThreads()) {
  internal::RunParallel(
      count, threads, [](const void* state, int64_t task) { (*static_cast<const Body*>(state))(task); }, &body);
}

// Tells the pool's spinning workers to sleep now: the caller is about to run OpenMP threads
// (oneDNN) on the same cores. The next ParallelFor wakes them.
void ParkWorkers();

}  // namespace stamen::engine::cpu

// Graceful shutdown for the long-running commands: SIGTERM and SIGINT are blocked in every
// thread (call BlockTerminationSignals before starting any) and the main thread waits for one.
#pragma once

#include <csignal>
#include <string>

namespace stamen::apps {

inline void BlockTerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

// Returns the name of the signal that arrived.
inline std::string WaitForTerminationSignal() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  return signal_number == SIGTERM ? "SIGTERM" : "SIGINT";
}

}  // namespace stamen::apps

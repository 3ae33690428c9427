// Loaded as a dynamic-linker audit library (LD_AUDIT, bench/avx2_only.sh) into a benchmark
// process to hide every AVX-512 feature from its cpuid instructions, so that ONNX Runtime's MLAS, oneDNN and PyTorch, which pick their
// kernels from cpuid and have no switch to hold them to AVX2, run their AVX2 code on an
// AVX-512 machine. Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID) turns each cpuid into a
// SIGSEGV; the handler runs the real instruction with faulting briefly lifted, clears the
// AVX-512 bits and steps over it. The setting is per thread and inherited by threads created
// afterwards. It is made in la_version, which the dynamic linker calls before it loads or
// initialises any library: oneDNN reads cpuid in its own initialisers, which run before the
// constructors of an LD_PRELOAD library.
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <link.h>
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

enum {
  // Leaf 7, subleaf 0, EBX: F, DQ, IFMA, PF, ER, CD, BW, VL.
  kLeaf7Ebx = (1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
              (1u << 30) | (1u << 31),
  // ECX: VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ.
  kLeaf7Ecx = (1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14),
  // EDX: 4VNNIW, 4FMAPS, VP2INTERSECT, FP16, and the AMX tiles.
  kLeaf7Edx = (1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) |
              (1u << 25),
  // Leaf 7, subleaf 1, EAX: AVX512_BF16.
  kLeaf7Subleaf1Eax = 1u << 5,
};

static volatile sig_atomic_t leaf7_queries;

static void set_cpuid_faulting(int on) { syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void on_segv(int signal_number, siginfo_t *info, void *context) {
  (void)info;
  mcontext_t *registers = &((ucontext_t *)context)->uc_mcontext;
  const uint8_t *instruction = (const uint8_t *)registers->gregs[REG_RIP];
  if (instruction[0] != 0x0f || instruction[1] != 0xa2) {
    // A real fault: let it end the process as it would have.
    signal(signal_number, SIG_DFL);
    return;
  }
  unsigned leaf = (unsigned)registers->gregs[REG_RAX], subleaf = (unsigned)registers->gregs[REG_RCX];
  unsigned eax, ebx, ecx, edx;
  set_cpuid_faulting(0);
  __cpuid_count(leaf, subleaf, eax, ebx, ecx, edx);
  set_cpuid_faulting(1);
  if (leaf == 7 && subleaf == 0) {
    ebx &= ~kLeaf7Ebx;
    ecx &= ~kLeaf7Ecx;
    edx &= ~kLeaf7Edx;
    leaf7_queries = leaf7_queries + 1;
  } else if (leaf == 7 && subleaf == 1) {
    eax &= ~kLeaf7Subleaf1Eax;
  }
  registers->gregs[REG_RAX] = eax;
  registers->gregs[REG_RBX] = ebx;
  registers->gregs[REG_RCX] = ecx;
  registers->gregs[REG_RDX] = edx;
  registers->gregs[REG_RIP] += 2;
}

unsigned int la_version(unsigned int version) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_segv;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSEGV, &action, NULL) != 0 || syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
    // Measuring AVX-512 code while calling it AVX2 would be worse than not measuring.
    fprintf(stderr, "hide_avx512: this kernel or CPU has no CPUID faulting (arch_prctl ARCH_SET_CPUID)\n");
    _exit(70);
  }
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

__attribute__((destructor)) static void report(void) {
  if (getenv("HIDE_AVX512_REPORT") != NULL) {
    fprintf(stderr, "hide_avx512: %d leaf-7 queries answered without AVX-512\n", (int)leaf7_queries);
  }
}

/* The calling thread's FP environment for the C tests: flush-to-zero, as -ffast-math sets
 * it at start-up. Header-only (static), shared by capi_test.c and output_side.c. */
#ifndef SIMAK_TEST_FP_ENV_H
#define SIMAK_TEST_FP_ENV_H

#include <stdint.h>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

/* Sets flush-to-zero (and denormals-are-zero on x86-64) on the calling thread; 1 when it
 * stuck (valgrind keeps MXCSR at its default, and some emulators ignore it). */
static inline int set_ftz(void) {
#if defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ and DAZ */
    return (_mm_getcsr() & 0x8040) == 0x8040;
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    fpcr |= (uint64_t)1 << 24; /* FZ */
    __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    return (fpcr >> 24 & 1) == 1;
#else
    return 0;
#endif
}

#endif /* SIMAK_TEST_FP_ENV_H */

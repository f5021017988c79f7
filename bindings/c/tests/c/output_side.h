/* The output side's C tests (output_side.c), run by capi_test's main. */
#ifndef SIMAK_TEST_OUTPUT_SIDE_H
#define SIMAK_TEST_OUTPUT_SIDE_H

/* Runs the Detess, DetessCast, DetessDequant, Dequant and head-placement checks, adding to
 * the counts of passed and failed checks. */
void output_side_tests(int *passed, int *failed);

#endif /* SIMAK_TEST_OUTPUT_SIDE_H */

/* Preproc's C tests (preproc.c), run by capi_test's main. */
#ifndef SIMAK_TEST_PREPROC_H
#define SIMAK_TEST_PREPROC_H

/* Runs the Preproc checks over the frames of DATA_DIR (tests/data), adding to the counts of
 * passed and failed checks. */
void preproc_tests(const char *data_dir, int *passed, int *failed);

#endif /* SIMAK_TEST_PREPROC_H */

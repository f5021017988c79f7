/* The model's C tests (model.c), run by capi_test's main. */
#ifndef SIMAK_TEST_MODEL_H
#define SIMAK_TEST_MODEL_H

/* Runs the model checks over the manifests of DATA_DIR/mpk (tests/data/mpk) and one written
 * here, adding to the counts of passed and failed checks. */
void model_tests(const char *data_dir, int *passed, int *failed);

#endif /* SIMAK_TEST_MODEL_H */

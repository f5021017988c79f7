/* The checks of the C tests. CHECK(cond, format, ...) counts a pass, or prints the failed
 * condition with its file and line and the formatted detail and counts a failure;
 * CHECK_CODE(got, want, err) checks a status code, the `simak_error`'s copy of it and its
 * message (empty exactly on success). A file defines CHECK_PASSED and CHECK_FAILED, the int
 * lvalues to count in, before it includes this header. */
#ifndef SIMAK_TEST_CHECK_H
#define SIMAK_TEST_CHECK_H

#include <stdio.h>

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            ++CHECK_PASSED;                                                \
        } else {                                                           \
            ++CHECK_FAILED;                                                \
            printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);       \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

#define CHECK_CODE(got, want, err)                                                       \
    CHECK((got) == (want) && (err).code == (got) &&                                      \
              ((want) == 0 ? (err).message[0] == 0 : (err).message[0] != 0),            \
          "code 0x%x (error.code 0x%x, \"%s\"), want 0x%x", (unsigned)(got),            \
          (unsigned)(err).code, (err).message, (unsigned)(want))

#endif /* SIMAK_TEST_CHECK_H */

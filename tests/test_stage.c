/* placeholder, replaced below */
#include "testutil.h"
static void t(void **state) { (void)state; }
int main(void) { const struct CMUnitTest tests[] = {cmocka_unit_test(t)}; return cmocka_run_group_tests(tests, NULL, NULL); }

#include "testutil.h"
int main(void) { return TU_SKIP; }

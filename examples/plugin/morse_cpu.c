/* Morse pair model — the CPU codelet: mdflow/pair.h's generic driver with
 * morse_kernel.h's arithmetic (half neighbour lists, Newton's third law,
 * slices of large systems, the virial when asked). */
#include "mdflow/pair.h"
#include "morse_kernel.h"
#include "morse.h"

MDF_PAIR_CPU_CODELET(morse_cpu, morse_params, morse_rc2, morse_pair)

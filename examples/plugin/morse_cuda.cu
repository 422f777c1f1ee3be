/* Morse pair model — the CUDA codelet: mdflow/pair_cuda.cuh's generic
 * driver with the same arithmetic (one thread per atom, full lists,
 * deterministic per-system sums on StarPU's stream). */
#include "mdflow/pair_cuda.cuh"
#include "morse_kernel.h"
#include "morse.h"

MDF_PAIR_CUDA_CODELET(morse_cuda, morse_params, morse_rc2, morse_pair)

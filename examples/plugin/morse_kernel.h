/* Morse pair model — the arithmetic, shared by the CPU codelet (morse_cpu.c,
 * compiled as C) and the CUDA one (morse_cuda.cu, compiled by nvcc): MDF_HD
 * makes each function both a host and a device function.
 *
 *   E(r) = D [(1 - e^{-a (r - r0)})² - 1] - E_shift      for r < cutoff
 *
 * E_shift is E(cutoff) with `shift`, else 0. With x = e^{-a (r - r0)},
 * E = D x (x - 2) and dE/dr = -2 a D x (x - 1): the pair function returns E
 * and fpair = -(dE/dr) / r, so that the force on i is -fpair (r_j - r_i)
 * (mdflow/pair.h): positive where the pair repels (r < r0). */
#ifndef MORSE_KERNEL_H
#define MORSE_KERNEL_H

#include "mdflow/kernel.h"

/* The model's parameter blob: what morse.c's setup computes from the
 * user's parameters, copied once to each GPU. One set for every element. */
typedef struct morse_params {
    double D;      /* well depth, eV */
    double a;      /* width, 1/Å */
    double r0;     /* equilibrium distance, Å */
    double rc2;    /* cutoff², Å² */
    double eshift; /* E(cutoff) when shifted, else 0, eV */
} morse_params;

/* E(r) without the shift (setup uses it for E_shift). */
MDF_HD double morse_energy(const morse_params *p, double r)
{
    double x = exp(-p->a * (r - p->r0));
    return p->D * x * (x - 2.0);
}

/* The squared cutoff of a pair of elements (the same for all). */
MDF_HD double morse_rc2(const morse_params *p, int32_t zi, int32_t zj)
{
    (void)zi;
    (void)zj;
    return p->rc2;
}

/* One pair at squared distance r2 < rc2: the energy, and *fpair. */
MDF_HD double morse_pair(const morse_params *p, int32_t zi, int32_t zj, double r2, double *fpair)
{
    (void)zi;
    (void)zj;
    double r = sqrt(r2);
    double x = exp(-p->a * (r - p->r0));
    *fpair = 2.0 * p->a * p->D * x * (x - 1.0) / r;
    return p->D * x * (x - 2.0) - p->eshift;
}

#endif

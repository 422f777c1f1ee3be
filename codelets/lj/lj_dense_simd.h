/* mdflow — the all-pairs loop of lj_dense.c, written once over a handful of
 * vector macros and compiled once per instruction set: lj_dense.c defines
 * V (a vector of DENSE_W doubles), M (a lane mask), the V_* operations,
 * DENSE_TARGET and DENSE_ISA, then includes this file. Not a public header.
 *
 * Row i takes the pairs (i, j > i) in whole blocks of DENSE_W atoms, from
 * the block holding i + 1 to the end of the padded arrays: in that first
 * block the lanes j <= i get r² pushed far past the cutoff (a load from
 * dense_penalty), and the padding atoms sit beyond the cutoff of every
 * atom, so every lane of every block goes through the same instructions
 * and the cutoff mask alone zeroes the pairs that do not count. */

#define DENSE_FN(name) DENSE_XCAT(name, DENSE_ISA)

/* Energy and virial (xx yy zz xy xz yz), summed lane-wise over all rows. */
typedef struct DENSE_FN(dense_acc) {
    V e, xx, yy, zz, xy, xz, yz;
} DENSE_FN(dense_acc);

/* Pairs (i, j .. j + DENSE_W - 1). pen: the first block's r² penalties, or
 * NULL; k: the single species' rc², c1..c4, offset as vectors. */
DENSE_TARGET DENSE_INLINE void
DENSE_FN(dense_block)(const dense_soa *a, int32_t j, V xi, V yi, V zi, const double *pen, const dense_coef *c,
                      const V *k, int single, int virial, V *fxi, V *fyi, V *fzi, DENSE_FN(dense_acc) *acc)
{
    const V dx = V_SUB(V_LOAD(a->x + j), xi), dy = V_SUB(V_LOAD(a->y + j), yi), dz = V_SUB(V_LOAD(a->z + j), zi);
    V r2 = V_FMA(dz, dz, V_FMA(dy, dy, V_MUL(dx, dx)));
    if (pen) r2 = V_ADD(r2, V_LOAD(pen));
    const M inside = V_LT(r2, single ? k[0] : V_LOAD(c->rc2 + j));
    const V r2inv = V_DIV(V_SET1(1.0), r2);
    const V r6inv = V_MUL(V_MUL(r2inv, r2inv), r2inv);
    const V c1 = single ? k[1] : V_LOAD(c->c1 + j), c2 = single ? k[2] : V_LOAD(c->c2 + j);
    const V c3 = single ? k[3] : V_LOAD(c->c3 + j), c4 = single ? k[4] : V_LOAD(c->c4 + j);
    const V off = single ? k[5] : V_LOAD(c->off + j);
    /* mdf_lj_pair's expressions, with fused multiply-adds where there are
     * some (every operation counts here: the loop is bound by them). */
    const V fpair = V_KEEP(V_MUL(V_MUL(r6inv, V_FMS(c1, r6inv, c2)), r2inv), inside);
    acc->e = V_ADD(acc->e, V_KEEP(V_FMS(r6inv, V_FMS(c3, r6inv, c4), off), inside));
    *fxi = V_FNMA(dx, fpair, *fxi);
    *fyi = V_FNMA(dy, fpair, *fyi);
    *fzi = V_FNMA(dz, fpair, *fzi);
    V_STORE(a->fx + j, V_FMA(dx, fpair, V_LOAD(a->fx + j)));
    V_STORE(a->fy + j, V_FMA(dy, fpair, V_LOAD(a->fy + j)));
    V_STORE(a->fz + j, V_FMA(dz, fpair, V_LOAD(a->fz + j)));
    if (virial) {
        const V gx = V_MUL(dx, fpair), gy = V_MUL(dy, fpair), gz = V_MUL(dz, fpair);
        acc->xx = V_FMA(dx, gx, acc->xx);
        acc->yy = V_FMA(dy, gy, acc->yy);
        acc->zz = V_FMA(dz, gz, acc->zz);
        acc->xy = V_FMA(dx, gy, acc->xy);
        acc->xz = V_FMA(dx, gz, acc->xz);
        acc->yz = V_FMA(dy, gz, acc->yz);
    }
}

/* Every pair of system a. `single` and `virial` are constants at each of
 * the four callers below, so each gets its own specialised loop. */
DENSE_TARGET DENSE_INLINE void
DENSE_FN(dense_pairs)(const dense_soa *soa, const mdf_lj_params *p, int single, int virial, dense_sums *out)
{
    /* A local copy: stores through the force arrays cannot alias it, so the
     * array pointers stay in registers. */
    const dense_soa copy = *soa, *a = &copy;
    const V zero = V_SET1(0.0);
    DENSE_FN(dense_acc) acc = {zero, zero, zero, zero, zero, zero, zero};
    const V k[6] = {V_SET1(p->rc2[0][0]), V_SET1(p->lj1[0][0]), V_SET1(p->lj2[0][0]),
                    V_SET1(p->lj3[0][0]), V_SET1(p->lj4[0][0]), V_SET1(p->offset[0][0])};
    for (int32_t i = 0; i < a->n - 1; i++) {
        const V xi = V_SET1(a->x[i]), yi = V_SET1(a->y[i]), zi = V_SET1(a->z[i]);
        const dense_coef *c = single ? NULL : &a->rows[a->t[i]];
        V fxi = zero, fyi = zero, fzi = zero;
        int32_t j = (i + 1) / DENSE_W * DENSE_W;
        const double *pen = dense_penalty + (j - i - 1 + DENSE_PENALTY_LANES);
        DENSE_FN(dense_block)(a, j, xi, yi, zi, pen, c, k, single, virial, &fxi, &fyi, &fzi, &acc);
        for (j += DENSE_W; j < a->np; j += DENSE_W)
            DENSE_FN(dense_block)(a, j, xi, yi, zi, NULL, c, k, single, virial, &fxi, &fyi, &fzi, &acc);
        a->fx[i] += V_SUM(fxi);
        a->fy[i] += V_SUM(fyi);
        a->fz[i] += V_SUM(fzi);
    }
    *out = (dense_sums){.e = V_SUM(acc.e),
                        .w = {V_SUM(acc.xx), V_SUM(acc.yy), V_SUM(acc.zz), V_SUM(acc.xy), V_SUM(acc.xz),
                              V_SUM(acc.yz)}};
}

DENSE_TARGET static void DENSE_FN(dense_run)(const dense_soa *a, const mdf_lj_params *p, int virial,
                                             dense_sums *out)
{
    if (p->ntypes == 1) {
        if (virial) DENSE_FN(dense_pairs)(a, p, 1, 1, out);
        else DENSE_FN(dense_pairs)(a, p, 1, 0, out);
    } else {
        if (virial) DENSE_FN(dense_pairs)(a, p, 0, 1, out);
        else DENSE_FN(dense_pairs)(a, p, 0, 0, out);
    }
}

#undef DENSE_FN
/* The parameters are used up: the next instruction set defines its own. */
#undef V
#undef M
#undef DENSE_W
#undef DENSE_ISA
#undef DENSE_TARGET
#undef V_SET1
#undef V_LOAD
#undef V_STORE
#undef V_ADD
#undef V_SUB
#undef V_MUL
#undef V_DIV
#undef V_FMA
#undef V_FMS
#undef V_FNMA
#undef V_LT
#undef V_KEEP
#undef V_SUM

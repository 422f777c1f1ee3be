/* mdflow tests — Lennard-Jones energies, forces and virials against theory:
 * the analytic dimer, finite differences of the energy, the virial's pair
 * definition and its strain derivative, and chunked = single-task results. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

typedef struct result {
    double energy, virial[9];
    double *forces;    /* 3n */
    double *positions; /* 3n, at the end (evaluate_steps) */
    int64_t overflowed; /* atoms with more neighbours than list slots */
    int nchunks;        /* the run's model chunks */
} result;

/* Energy, forces and virial of the first of nframes frames (one batch)
 * after `steps` velocity Verlet steps of 1 fs (0: at the start), computed
 * by the StarPU pipeline with the given chunk size (0: automatic). Steps
 * between the first and the last ask for no virial: the models' other
 * loops. */
static result evaluate_steps(const mdf_frame *f, size_t nframes, const mdf_lj_config *lj, int32_t chunk_atoms,
                             int nshards, int steps)
{
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, lj, &m);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = nshards;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, nframes, &bc, &b);
    mdf_md_config md;
    mdf_md_config_init(&md);
    md.steps = steps; /* 0: forces at the starting point only */
    md.dt_fs = 1.0;
    md.skin = 0.5;
    if (chunk_atoms) md.chunk_atoms = chunk_atoms;
    mdf_md_report rep;
    TU_CALL(mdf_md_run, b, m, &md, &rep);
    mdf_system_view v;
    TU_CALL(mdf_batch_get_system, b, 0, &v);
    mdf_frame out;
    TU_CALL(mdf_batch_get_frame, b, 0, &out);
    result r = {.energy = v.potential_energy, .overflowed = rep.overflowed_atoms, .nchunks = rep.nchunks};
    memcpy(r.virial, v.virial, sizeof r.virial);
    r.forces = malloc(sizeof(double) * 3 * (size_t)f->natoms);
    memcpy(r.forces, out.forces, sizeof(double) * 3 * (size_t)f->natoms);
    r.positions = NULL;
    if (steps) {
        r.positions = malloc(sizeof(double) * 3 * (size_t)f->natoms);
        memcpy(r.positions, out.positions, sizeof(double) * 3 * (size_t)f->natoms);
    }
    mdf_frame_free(&out);
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    return r;
}

static result evaluate(const mdf_frame *f, const mdf_lj_config *lj, int32_t chunk_atoms, int nshards)
{
    return evaluate_steps(f, 1, lj, chunk_atoms, nshards, 0);
}

static double energy_of(const mdf_frame *f, const mdf_lj_config *lj)
{
    result r = evaluate(f, lj, 0, 1);
    free(r.forces);
    return r.energy;
}

/* E(r) = 4ε[(σ/r)^12 − (σ/r)^6] − shift, F = 24ε[2(σ/r)^12 − (σ/r)^6]/r. */
static void test_dimer(void **state)
{
    (void)state;
    const double eps = 0.0104, sig = 3.4, rc = 8.5;
    for (int shift = 0; shift <= 1; shift++) {
        mdf_lj_config lj = tu_argon(rc, shift);
        const double rs[] = {3.0, 3.4, 3.816, 5.0, 8.49, 8.51};
        for (size_t k = 0; k < sizeof rs / sizeof rs[0]; k++) {
            double r = rs[k];
            mdf_frame f;
            memset(&f, 0, sizeof f);
            TU_CALL(mdf_frame_alloc, &f, 2, 0, 0, 0);
            f.numbers[0] = f.numbers[1] = 18;
            double dir[3] = {0.48, -0.6, 0.64}; /* unit vector */
            for (int q = 0; q < 3; q++) f.positions[3 + q] = r * dir[q];
            result res = evaluate(&f, &lj, 0, 1);
            double sr6 = pow(sig / r, 6), src6 = pow(sig / rc, 6);
            double e = r < rc ? 4 * eps * (sr6 * sr6 - sr6) - (shift ? 4 * eps * (src6 * src6 - src6) : 0.0) : 0.0;
            double fmag = r < rc ? 24 * eps * (2 * sr6 * sr6 - sr6) / r : 0.0;
            if (tu_reldiff(res.energy, e, eps) > 1e-13) /* relative to ε where E crosses 0 */
                fail_msg("dimer r=%g shift=%d: energy %.17g, theory %.17g", r, shift, res.energy, e);
            for (int q = 0; q < 3; q++) {
                /* Repulsive (fmag > 0) pushes atom 1 along +dir. */
                /* Relative to the force scale ε/σ where F crosses 0 (r = 2^(1/6) σ). */
                if (fabs(res.forces[3 + q] - fmag * dir[q]) > 1e-13 * fmax(fabs(fmag), eps / sig))
                    fail_msg("dimer r=%g: force %.17g, theory %.17g", r, res.forces[3 + q], fmag * dir[q]);
                assert_true(fabs(res.forces[q] + res.forces[3 + q]) <= 1e-15);
                for (int p = 0; p < 3; p++) {
                    double w = r * fmag * dir[p] * dir[q]; /* (r_i - r_j) ⊗ f_i */
                    assert_true(fabs(res.virial[3 * p + q] - w) <= 1e-13 * fmax(fabs(r * fmag), eps));
                }
            }
            free(res.forces);
            mdf_frame_free(&f);
        }
    }
}

static mdf_frame test_systems(int which)
{
    int zs[] = {18, 36};
    if (which == 0) return tu_fcc(4, 4, 4, 5.3, 18, 0.15, 0.15, 7); /* triclinic crystal */
    double box[9] = {16, 0, 0, 0, 16, 0, 0, 0, 16};
    int open[3] = {0, 0, 0};
    mdf_frame f = tu_random(40, box, open, 3.0, zs, 2, 11); /* Ar/Kr cluster */
    memset(f.cell, 0, sizeof f.cell);
    f.has_cell = 0;
    return f;
}

static mdf_lj_config two_species(int shift)
{
    mdf_lj_config lj = tu_argon(7.5, shift);
    mdf_error err;
    mdf_error_clear(&err);
    mdf_lj_config_add_species(&lj, 36, 0.0140, 3.65, 7.5, &err);
    mdf_lj_config_set_pair(&lj, 18, 36, 0.0121, 3.52, 7.0, &err);
    return lj;
}

/* F = −∇E by central differences (h = 1e-5 Å; truncation ~h² F''' ≈ 1e-10). */
static void test_forces_finite_difference(void **state)
{
    (void)state;
    mdf_lj_config lj = two_species(1);
    for (int which = 0; which < 2; which++) {
        mdf_frame f = test_systems(which);
        result r = evaluate(&f, &lj, 0, 1);
        double fbig = 0.0;
        for (int64_t k = 0; k < 3 * f.natoms; k++) fbig = fmax(fbig, fabs(r.forces[k]));
        const double h = 1e-5;
        for (int64_t k = 0; k < 3 * f.natoms; k += 7) {
            double x = f.positions[k];
            f.positions[k] = x + h;
            double ep = energy_of(&f, &lj);
            f.positions[k] = x - h;
            double em = energy_of(&f, &lj);
            f.positions[k] = x;
            double fd = -(ep - em) / (2 * h);
            if (fabs(fd - r.forces[k]) > 1e-6 * fbig + 1e-9)
                fail_msg("system %d component %lld: force %.12g, finite difference %.12g", which, (long long)k,
                         r.forces[k], fd);
        }
        free(r.forces);
        mdf_frame_free(&f);
    }
}

/* Virial: the pair sum Σ (r_i − r_j) ⊗ f_ij by brute force over images,
 * and W_ab = −∂E/∂ε_ab under a homogeneous strain of cell and atoms. */
static void test_virial(void **state)
{
    (void)state;
    mdf_lj_config lj = tu_argon(7.9, 0);
    mdf_frame f = tu_fcc(4, 4, 4, 5.3, 18, 0.1, 0.2, 3);
    result r = evaluate(&f, &lj, 0, 1);
    double w[9] = {0};
    const double eps = 0.0104, sig = 3.4, rc = 7.9;
    for (int64_t i = 0; i < f.natoms; i++)
        for (int64_t j = 0; j < f.natoms; j++)
            for (int a = -1; a <= 1; a++)
                for (int b = -1; b <= 1; b++)
                    for (int c = -1; c <= 1; c++) {
                        if (i == j && !a && !b && !c) continue;
                        double d[3], r2 = 0.0;
                        for (int q = 0; q < 3; q++) {
                            d[q] = f.positions[3 * i + q] - f.positions[3 * j + q] -
                                   (a * f.cell[q] + b * f.cell[3 + q] + c * f.cell[6 + q]);
                            r2 += d[q] * d[q];
                        }
                        if (r2 >= rc * rc) continue;
                        double sr6 = pow(sig * sig / r2, 3);
                        double fr = 24 * eps * (2 * sr6 * sr6 - sr6) / r2; /* f_i = fr * d */
                        for (int p = 0; p < 3; p++)
                            for (int q = 0; q < 3; q++) w[3 * p + q] += 0.5 * d[p] * fr * d[q];
                    }
    double scale = 0.0;
    for (int k = 0; k < 9; k++) scale = fmax(scale, fabs(w[k]));
    for (int k = 0; k < 9; k++)
        if (fabs(r.virial[k] - w[k]) > 1e-10 * scale) fail_msg("virial[%d] %.15g, pair sum %.15g", k, r.virial[k], w[k]);
    /* Strain derivative, symmetric strains. */
    const double h = 1e-6;
    for (int p = 0; p < 3; p++)
        for (int q = p; q < 3; q++) {
            double e[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                double s = sgn ? -h : h;
                double strain[9] = {0};
                strain[3 * p + q] += 0.5 * s;
                strain[3 * q + p] += 0.5 * s;
                mdf_frame g;
                TU_CALL(mdf_frame_copy, &g, &f);
                for (int64_t row = 0; row < g.natoms + 3; row++) {
                    double *v = row < g.natoms ? g.positions + 3 * row : g.cell + 3 * (row - g.natoms);
                    double o[3] = {v[0], v[1], v[2]};
                    for (int k = 0; k < 3; k++) v[k] = o[k] + strain[3 * k] * o[0] + strain[3 * k + 1] * o[1] + strain[3 * k + 2] * o[2];
                }
                e[sgn] = energy_of(&g, &lj);
                mdf_frame_free(&g);
            }
            double dE = (e[0] - e[1]) / (2 * h);
            double want = -0.5 * (r.virial[3 * p + q] + r.virial[3 * q + p]);
            if (fabs(dE - want) > 1e-6 * scale) fail_msg("dE/de_%d%d = %.12g, -W = %.12g", p, q, dE, want);
        }
    free(r.forces);
    mdf_frame_free(&f);
}

/* Forces by the pair formula over every pair (open system, no images). */
static void brute_forces(const mdf_frame *f, double eps, double sig, double rc, double *out)
{
    memset(out, 0, sizeof(double) * 3 * (size_t)f->natoms);
    for (int64_t i = 0; i < f->natoms; i++)
        for (int64_t j = 0; j < f->natoms; j++) {
            if (i == j) continue;
            double d[3], r2 = 0.0;
            for (int q = 0; q < 3; q++) {
                d[q] = f->positions[3 * i + q] - f->positions[3 * j + q];
                r2 += d[q] * d[q];
            }
            if (r2 >= rc * rc) continue;
            double sr6 = pow(sig * sig / r2, 3);
            for (int q = 0; q < 3; q++) out[3 * i + q] += 24 * eps * (2 * sr6 * sr6 - sr6) / r2 * d[q];
        }
}

/* An open system leaves the all-pairs path when it spreads out (its box
 * grows past 12 list spheres; codelets/nlist/nlist_cpu.c): two argon
 * clusters side by side along x, flying apart along (1,1,1). Before, no
 * list is built; after, lists are, and the forces are the pair formula's
 * both times. */
static void test_all_pairs_switch(void **state)
{
    (void)state;
    const double eps = 0.0104, sig = 3.4, rc = 7.0;
    mdf_lj_config lj = tu_argon(rc, 0);
    mdf_frame a = tu_fcc_cluster(5.26, 1.3, 0.05, 41), b = tu_fcc_cluster(5.26, 1.3, 0.05, 42);
    mdf_frame f;
    TU_CALL(mdf_frame_alloc, &f, a.natoms + b.natoms, 1, 0, 0);
    f.has_cell = 0;
    for (int64_t i = 0; i < f.natoms; i++) {
        const mdf_frame *src = i < a.natoms ? &a : &b;
        int64_t k = i < a.natoms ? i : i - a.natoms;
        double side = i < a.natoms ? -1.0 : 1.0;
        f.numbers[i] = 18;
        for (int q = 0; q < 3; q++) {
            f.positions[3 * i + q] = src->positions[3 * k + q] + (q == 0 ? side * 8.3 : 0.0);
            f.velocities[3 * i + q] = side * 0.3 / mdf_fs_to_internal(1.0); /* 0.3 Å/fs, in Å per internal unit */
        }
    }
    assert_true(f.natoms > 64);
    double *want = malloc(sizeof(double) * 3 * (size_t)f.natoms);
    for (int steps = 0; steps <= 60; steps += 60) {
        mdf_model *m = NULL;
        TU_CALL(mdf_model_create_lj, &lj, &m);
        mdf_batch *bt = NULL;
        TU_CALL(mdf_batch_create, &f, 1, NULL, &bt);
        mdf_md_config md;
        mdf_md_config_init(&md);
        md.steps = steps;
        md.dt_fs = 1.0;
        md.skin = 1.0;
        mdf_md_report rep;
        TU_CALL(mdf_md_run, bt, m, &md, &rep);
        mdf_frame out;
        TU_CALL(mdf_batch_get_frame, bt, 0, &out);
        brute_forces(&out, eps, sig, rc, want);
        double big = 0.0, worst = 0.0, spread = 0.0;
        for (int64_t k = 0; k < 3 * out.natoms; k++) {
            big = fmax(big, fabs(want[k]));
            worst = fmax(worst, fabs(out.forces[k] - want[k]));
        }
        for (int q = 1; q < 3; q++)
            spread = fmax(spread, out.positions[3 * (out.natoms - 1) + q] - out.positions[q]);
        printf("  after %d steps: %.1f Å apart, list builds %lld, max |F| %.4g, max deviation %.2e\n", steps, spread,
               (long long)rep.list_rebuilds, big, worst);
        assert_true(worst <= 1e-10 * big);
        /* Box (30 x 14 x 14 Å) within 12 spheres of 8 Å at first; then far
         * beyond. With CUDA workers every system keeps lists (their model uses them). */
        if (steps) assert_true(spread > 30.0 && rep.list_rebuilds > 0);
        else if (mdf_runtime_cuda_workers() == 0) assert_true(rep.list_rebuilds == 0);
        mdf_frame_free(&out);
        mdf_batch_destroy(bt);
        mdf_model_destroy(m);
    }
    free(want);
    mdf_frame_free(&f);
    mdf_frame_free(&a);
    mdf_frame_free(&b);
}

/* A system split over several model tasks (chunks, then a sum) gives the
 * single-task numbers up to summation order: argon and krypton (the
 * general row loops), and argon alone (one species: the three-pass rows,
 * sliced and whole). */
static void test_chunked_equals_single(void **state)
{
    (void)state;
    for (int mixed = 0; mixed < 2; mixed++) {
        mdf_lj_config lj = mixed ? two_species(0) : tu_argon(7.5, 0);
        mdf_frame f = tu_fcc(5, 5, 5, 5.3, 18, 0.1, 0.1, 5);
        for (int64_t a = 0; mixed && a < f.natoms; a += 3) f.numbers[a] = 36;
        result one = evaluate(&f, &lj, 100000, 1);
        const int32_t chunks[] = {64, 100, 499};
        for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
            result r = evaluate(&f, &lj, chunks[k], 1);
            assert_true(tu_reldiff(r.energy, one.energy, 1e-30) < 1e-12);
            for (int q = 0; q < 9; q++)
                assert_true(fabs(r.virial[q] - one.virial[q]) < 1e-12 * fabs(one.virial[0]));
            for (int64_t a = 0; a < 3 * f.natoms; a++) assert_true(fabs(r.forces[a] - one.forces[a]) < 1e-13);
            free(r.forces);
        }
        free(one.forces);
        /* Steps without the virial (a loop of their own): the positions
         * they reach. A force off by 1e-3 would move atoms by 1e-8 Å. */
        result walk1 = evaluate_steps(&f, 1, &lj, 100000, 1, 4);
        for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
            result r = evaluate_steps(&f, 1, &lj, chunks[k], 1, 4);
            for (int64_t a = 0; a < 3 * f.natoms; a++) {
                assert_true(fabs(r.positions[a] - walk1.positions[a]) < 1e-12);
                assert_true(fabs(r.forces[a] - walk1.forces[a]) < 1e-13);
            }
            free(r.forces);
            free(r.positions);
        }
        free(walk1.forces);
        free(walk1.positions);
        mdf_frame_free(&f);
    }
}

/* A periodic system alone in its batch is cut in two from 768 atoms (CPU
 * workers only), below the 2,048-atom slices of large systems, so that two
 * workers share it; in a batch with others it stays whole. The same
 * numbers either way, up to summation order. */
static void test_lone_system_halves(void **state)
{
    (void)state;
    if (mdf_runtime_cuda_workers() > 0) skip();
    mdf_lj_config lj = tu_argon(7.5, 0);
    mdf_frame pair[2] = {tu_fcc(6, 6, 6, 5.3, 18, 0.0, 0.05, 21), tu_fcc(3, 3, 3, 5.3, 18, 0.0, 0.05, 22)};
    result alone = evaluate_steps(pair, 1, &lj, 0, 1, 0), batched = evaluate_steps(pair, 2, &lj, 0, 1, 0);
    assert_int_equal(alone.nchunks, 2);   /* 864 atoms: 432 + 432 */
    assert_int_equal(batched.nchunks, 1); /* with a second system: whole */
    assert_true(tu_reldiff(alone.energy, batched.energy, 1e-30) < 1e-12);
    for (int64_t a = 0; a < 3 * pair[0].natoms; a++) assert_true(fabs(alone.forces[a] - batched.forces[a]) < 1e-13);
    free(alone.forces);
    free(batched.forces);
    mdf_frame open = tu_fcc(6, 6, 6, 5.3, 18, 0.0, 0.05, 23);
    open.pbc[0] = open.pbc[1] = open.pbc[2] = 0;
    open.has_cell = 0;
    memset(open.cell, 0, sizeof open.cell);
    const mdf_frame *whole[2] = {&pair[1], &open}; /* 108 atoms; open: its all-pairs path */
    for (int k = 0; k < 2; k++) {
        result r = evaluate_steps(whole[k], 1, &lj, 0, 1, 0);
        assert_int_equal(r.nchunks, 1);
        free(r.forces);
    }
    mdf_frame_free(&open);
    for (int k = 0; k < 2; k++) mdf_frame_free(&pair[k]);
}

/* Slices of an open cluster packed far above the model's density hint:
 * rows with more neighbours than slots walk their cells, and a slice's
 * pairs with other slices (computed once by the row that owns them, their
 * partners' shares sent back) must still sum to the single-task numbers.
 * Two slices' rows own about half of their pairs (mdf_nl_pair_owned), so
 * the packing is tighter than j > i rows alone needed: at 3.4 Å some of
 * the 864 atoms overflow at each slice size, not all. */
static void test_chunked_overflow(void **state)
{
    (void)state;
    mdf_lj_config lj = tu_argon(7.5, 0);
    mdf_frame f = tu_fcc(6, 6, 6, 3.4, 18, 0.0, 0.05, 11);
    f.pbc[0] = f.pbc[1] = f.pbc[2] = 0;
    f.has_cell = 0;
    memset(f.cell, 0, sizeof f.cell);
    result one = evaluate(&f, &lj, 100000, 1);
    const int32_t chunks[] = {100, 333, 432}; /* 432: two slices, rows owning their pairs */
    for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
        result r = evaluate(&f, &lj, chunks[k], 1);
        if (r.overflowed <= 0 || r.overflowed >= f.natoms)
            fail_msg("%lld of %lld atoms overflowed: want some, not all", (long long)r.overflowed,
                     (long long)f.natoms);
        assert_true(tu_reldiff(r.energy, one.energy, 1e-30) < 1e-12);
        for (int q = 0; q < 9; q++) assert_true(fabs(r.virial[q] - one.virial[q]) < 1e-12 * fabs(one.virial[0]));
        double fmax = 0.0;
        for (int64_t a = 0; a < 3 * f.natoms; a++) fmax = fmax > fabs(one.forces[a]) ? fmax : fabs(one.forces[a]);
        for (int64_t a = 0; a < 3 * f.natoms; a++) assert_true(fabs(r.forces[a] - one.forces[a]) < 1e-12 * fmax);
        free(r.forces);
    }
    free(one.forces);
    mdf_frame_free(&f);
}

/* Energy, forces and virial of an open system by the plain pair formula,
 * with the pair parameters of two_species(1) (argon alone when the frame
 * has no krypton): the reference for the all-pairs loops. */
static void brute_two_species(const mdf_frame *f, double *energy, double *forces, double w[9])
{
    *energy = 0.0;
    memset(forces, 0, sizeof(double) * 3 * (size_t)f->natoms);
    memset(w, 0, sizeof(double) * 9);
    for (int64_t i = 0; i < f->natoms; i++)
        for (int64_t j = i + 1; j < f->natoms; j++) {
            int kr = (f->numbers[i] == 36) + (f->numbers[j] == 36);
            double eps = kr == 0 ? 0.0104 : kr == 2 ? 0.0140 : 0.0121;
            double sig = kr == 0 ? 3.4 : kr == 2 ? 3.65 : 3.52, rc = kr == 1 ? 7.0 : 7.5;
            double d[3], r2 = 0.0;
            for (int q = 0; q < 3; q++) {
                d[q] = f->positions[3 * i + q] - f->positions[3 * j + q];
                r2 += d[q] * d[q];
            }
            if (r2 >= rc * rc) continue;
            double sr6 = pow(sig * sig / r2, 3), sc6 = pow(sig / rc, 6);
            *energy += 4 * eps * (sr6 * sr6 - sr6) - 4 * eps * (sc6 * sc6 - sc6);
            double fr = 24 * eps * (2 * sr6 * sr6 - sr6) / r2; /* f_i = fr * d */
            for (int q = 0; q < 3; q++) {
                forces[3 * i + q] += fr * d[q];
                forces[3 * j + q] -= fr * d[q];
                for (int p = 0; p < 3; p++) w[3 * p + q] += d[p] * fr * d[q];
            }
        }
}

/* Whether this CPU runs an instruction set of MDF_LJ_DENSE_SIMD. */
static int cpu_has(const char *simd)
{
    if (!strcmp(simd, "generic")) return 1;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (!strcmp(simd, "avx2")) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!strcmp(simd, "avx512")) return __builtin_cpu_supports("avx512f");
#endif
    return 0;
}

/* The all-pairs loop is compiled for AVX-512, AVX2 and portable vectors; the
 * model picks one (MDF_LJ_DENSE_SIMD overrides): each one this CPU runs
 * gives the pair formula's numbers on open clusters of 5, 13 and 45 atoms
 * (neither a whole number of 8-atom blocks), one and two species. A set
 * the CPU lacks, or an unknown name, is refused with the variable's name. */
static void test_all_pairs_every_simd(void **state)
{
    (void)state;
    const double box[9] = {14, 0, 0, 0, 14, 0, 0, 0, 14};
    const int open[3] = {0, 0, 0}, zs[2] = {18, 36};
    mdf_frame frames[3] = {tu_random(5, box, open, 3.0, zs, 1, 21), tu_fcc_cluster(5.26, 0.75, 0.1, 22),
                           tu_random(45, box, open, 3.0, zs, 2, 23)};
    const char *sets[] = {"generic", "avx2", "avx512", "auto"};
    mdf_lj_config lj = two_species(1);
    int ran = 0;
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        setenv("MDF_LJ_DENSE_SIMD", sets[k], 1);
        if (strcmp(sets[k], "auto") && !cpu_has(sets[k])) {
            mdf_model *m = NULL;
            mdf_error err;
            mdf_error_clear(&err);
            assert_int_equal(mdf_model_create_lj(&lj, &m, &err), MDF_ERR_INVALID);
            assert_non_null(strstr(err.message, "MDF_LJ_DENSE_SIMD"));
            printf("  %s: not on this CPU, refused: %s\n", sets[k], err.message);
            continue;
        }
        for (int which = 0; which < 3; which++) {
            mdf_frame *f = &frames[which];
            memset(f->cell, 0, sizeof f->cell);
            f->has_cell = 0;
            assert_true(f->natoms <= 64 && f->natoms % 8 != 0); /* always all pairs, a partial block */
            result r = evaluate(f, &lj, 0, 1);
            double e, w[9], *want = malloc(sizeof(double) * 3 * (size_t)f->natoms);
            brute_two_species(f, &e, want, w);
            double fbig = 0.0, ferr = 0.0, wbig = 0.0, werr = 0.0;
            for (int64_t q = 0; q < 3 * f->natoms; q++) {
                fbig = fmax(fbig, fabs(want[q]));
                ferr = fmax(ferr, fabs(r.forces[q] - want[q]));
            }
            for (int q = 0; q < 9; q++) {
                wbig = fmax(wbig, fabs(w[q]));
                werr = fmax(werr, fabs(r.virial[q] - w[q]));
            }
            printf("  %-6s %2lld atoms: energy %.15g (pair sum %.15g), max force deviation %.1e of %.3g\n", sets[k],
                   (long long)f->natoms, r.energy, e, ferr, fbig);
            assert_true(fabs(r.energy - e) <= 1e-12 * fmax(fabs(e), 0.0104));
            assert_true(ferr <= 1e-12 * fbig);
            assert_true(werr <= 1e-12 * wbig);
            free(want);
            free(r.forces);
        }
        ran++;
    }
    assert_true(ran >= 2); /* generic and auto at least */
    setenv("MDF_LJ_DENSE_SIMD", "sse9", 1);
    mdf_model *m = NULL;
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_model_create_lj(&lj, &m, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "MDF_LJ_DENSE_SIMD=sse9"));
    assert_null(m);
    unsetenv("MDF_LJ_DENSE_SIMD");
    for (int which = 0; which < 3; which++) mdf_frame_free(&frames[which]);
}

/* An element without parameters is refused with its name. */
static void test_unknown_species(void **state)
{
    (void)state;
    mdf_lj_config lj = tu_argon(7.0, 0);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    mdf_frame f = test_systems(1); /* has Kr */
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, &f, 1, NULL, &b);
    mdf_md_config md;
    mdf_md_config_init(&md);
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_md_run(b, m, &md, NULL, &err), MDF_ERR_INVALID);
    assert_non_null(strstr(err.message, "Kr"));
    mdf_batch_destroy(b);
    mdf_model_destroy(m);
    mdf_frame_free(&f);
    mdf_lj_config bad;
    mdf_lj_config_init(&bad);
    assert_int_equal(mdf_lj_config_add_species(&bad, 18, 0.01, -1.0, 5.0, &err), MDF_ERR_INVALID);
}

int main(void)
{
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dimer),
        cmocka_unit_test(test_forces_finite_difference),
        cmocka_unit_test(test_virial),
        cmocka_unit_test(test_lone_system_halves),
        cmocka_unit_test(test_chunked_equals_single),
        cmocka_unit_test(test_chunked_overflow),
        cmocka_unit_test(test_all_pairs_switch),
        cmocka_unit_test(test_all_pairs_every_simd),
        cmocka_unit_test(test_unknown_species),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    tu_stop();
    return failed ? 1 : 0;
}

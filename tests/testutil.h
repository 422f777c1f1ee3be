/* mdflow tests — shared helpers: StarPU start with a chosen scheduler,
 * structure builders, a deterministic random generator, temp dirs. */
#ifndef MDF_TESTUTIL_H
#define MDF_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "mdflow/mdflow.h"

#define TU_SKIP 77

/* MDF_TEST_ONLY=PATTERN runs only the tests whose names match (cmocka's
 * filter: '*' and '?' wildcards), e.g. to rerun one case on a GPU node. */
void tu_test_filter_from_env(void);

/* Starts StarPU with sched (NULL: default) and ncpus CPU workers (-1: all),
 * no CUDA unless want_cuda. */
void tu_start(const char *sched, int ncpus, int want_cuda);
void tu_stop(void);

/* splitmix64 in [0, 1). */
double tu_rand(uint64_t *state);
double tu_gauss(uint64_t *state);

/* fcc crystal of nx*ny*nz cubic cells (lattice a, element z), optionally
 * skewed into a triclinic cell (tilt as fraction of a), positions jittered. */
mdf_frame tu_fcc(int nx, int ny, int nz, double a, int z, double tilt, double jitter, uint64_t seed);
/* n atoms at random in cell (rows) with pbc, at least min_dist apart
 * (nearest image along periodic directions); z alternates over zs[nz]. */
mdf_frame tu_random(int n, const double cell[9], const int pbc[3], double min_dist, const int *zs, int nz,
                    uint64_t seed);

/* An argon cluster: the fcc lattice points (lattice a) within r_over_a · a
 * of a lattice site, each displaced by jitter · N(0,1) Å, no cell; at most
 * 64 atoms. */
mdf_frame tu_fcc_cluster(double a, double r_over_a, double jitter, uint64_t seed);

/* System i of the inflight tests' datasets: argon fcc clusters whose radius
 * cycles through four sizes, jittered as tu_fcc_cluster. */
mdf_frame tu_mixed_cluster(int i, double jitter, uint64_t seed);

/* The Einstein frequency² of an LJ system, (1/3N) Σ_i tr(∂²U/∂r_i²)/m_i,
 * from pairs within rc (images ±1 along every direction when all three are
 * periodic); masses from the frame or the element table. The harmonic
 * shadow-energy bounds of the NVE and Nosé–Hoover tests use it. */
double tu_lj_einstein_omega2(const mdf_frame *f, double epsilon, double sigma, double rc);

/* A codelet hook (AFTER_POST_UPDATE, every step) that puts a NaN into the x
 * of the first atom of system `id` at stage step `step` (step < 0: at the
 * system's own step -step in the stage, whenever the stage's run reaches
 * it): how tests feed the NaN detector (inputs are validated finite). CPU
 * only. */
mdf_hook *tu_poison_hook(int64_t id, int64_t step);

/* 1 if StarPU, started with one CPU and CUDA allowed, has a CUDA worker
 * (StarPU is stopped again). */
int tu_have_cuda_worker(void);

/* Argon Lennard-Jones (ε 0.0104 eV, σ 3.40 Å). */
mdf_lj_config tu_argon(double cutoff, int shift);
/* The native EAM model of the LAMMPS potential file at path (its flavour
 * from the name), with the model's density_hint when not NULL; fails the
 * test when it cannot be made. */
mdf_model *tu_eam_model(const char *path, const char *density_hint);
/* The folder of LAMMPS's potential files: MDF_LAMMPS_POTENTIALS, else
 * Debian's (lammps-data). */
const char *tu_lammps_potentials(void);

/* A fresh directory under /tmp; caller frees the string. */
char *tu_tmpdir(void);
/* LAMMPS (`lmp`) run in folder dir on input `in` (written as dir/in.lmp;
 * dir/results.txt and dir/forces.dump removed first). On failure: the end
 * of LAMMPS's screen output on stderr, and the test fails. */
void tu_lmp_run(const char *dir, const char *in);
/* Up to n numbers read from dir/name; returns how many (0: no file). */
int tu_read_doubles(const char *dir, const char *name, double *v, int n);
/* LAMMPS's nktv2p (bar per eV/Å³, metal units), measured with two
 * non-interacting moving atoms: P_xx = nktv2p Σ m v_x² mvv2e / V, and
 * c_thermo_temp[1] = Σ m v_x² mvv2e. (LAMMPS's constant differs from
 * CODATA's by 1e-8, more than the 1e-10 the reference tests ask for.) */
double tu_lmp_nktv2p(const char *dir);
/* LAMMPS data file dir/data.lmp (atom_style atomic) for frame f: types
 * 1..ntypes are the elements type_z[] (with their standard masses). The box
 * is the cell along periodic directions (already in LAMMPS's restricted
 * triclinic form: a along x, b in the xy plane), the atoms' extent plus 10 Å
 * along open ones. */
void tu_lmp_write_data(const char *dir, const mdf_frame *f, int ntypes, const int *type_z);
/* Input lines that end a LAMMPS single-point input: zero velocities, a
 * sorted forces dump (forces.dump) and "pe pxx pyy pzz pxy pxz pyz vol
 * atoms" in results.txt, all with %.17g; read back by tu_lmp_read_point.
 * (Plain text: pass it as a %s argument.) */
extern const char tu_lmp_point_input[];
typedef struct tu_lmp_point {
    double pe;      /* eV */
    double p[9];    /* pressure tensor, bar (symmetric) */
    double vol;     /* Å³ */
    double *forces; /* natoms*3, eV/Å (malloc'd) */
} tu_lmp_point;
/* What an input ending in tu_lmp_point_input left in dir, for a frame of
 * natoms atoms (what: named in failures). */
void tu_lmp_read_point(const char *dir, int64_t natoms, const char *what, tu_lmp_point *out);
/* Writes text to path (the test fails if it cannot). */
void tu_write_text(const char *path, const char *text);
/* Removes a directory made by tu_tmpdir and everything in it. */
int tu_remove_tree(const char *dir); /* 0 on success */
/* 1 if `command -v name` succeeds. */
int tu_have(const char *name);
/* Python with ASE (MDF_PYTHON or /usr/bin/python3), or NULL if none. */
const char *tu_python_with(const char *module);
/* $MDF_TEST_SRCDIR or ".". */
const char *tu_srcdir(void);

/* Relative difference |a-b| / max(|a|,|b|, floor). */
double tu_reldiff(double a, double b, double floor);

/* For an open cluster W = Σ_pairs (r_i - r_j) ⊗ f_ij = Σ_i r_i ⊗ F_i (theory):
 * a frame's "virial" key is checked against its own positions and forces.
 * Returns whether the frame has one; fails (naming system `sys`) if it is
 * not that of them. */
int tu_frame_virial_is_current(const mdf_frame *f, long long sys);

/* Method parameters for tests that run several methods with one set of
 * settings: tu_param adds "name" or "method.name" = value to a list (fails
 * the test on error); tu_method_params copies into cfg->method_params the
 * entries for cfg->integrator (its registry name or an alias): "method.name"
 * entries of that method without their prefix, and every plain "name"
 * entry (so an unknown name still reaches mdf_stage_create). */
void tu_param(mdf_param_list *l, const char *name, double value);
void tu_method_params(mdf_stage_config *cfg, const mdf_param_list *all);

/* Energies, forces and virials at the frames' positions: an mdf_md_run of
 * 0 steps on one shard (batch order = the frames' order) with this skin and
 * model chunking (0: automatic). Returns the batch (synchronised); its
 * report in *rep. */
mdf_batch *tu_single_point(const mdf_frame *frames, size_t n, mdf_model *m, int32_t chunk_atoms, double skin,
                           mdf_md_report *rep);

/* Calls fn(args..., &err) and fails the test with the error's message. */
#define TU_CALL(fn, ...)                                                                               \
    do {                                                                                               \
        mdf_error tu_err_;                                                                             \
        mdf_error_clear(&tu_err_);                                                                     \
        if (fn(__VA_ARGS__, &tu_err_) != MDF_OK) fail_msg("%s: %s", #fn, tu_err_.message);             \
    } while (0)

#endif

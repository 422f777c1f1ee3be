/* mdflow tests — neighbour lists against the brute-force pair set, and the
 * skin/2 rebuild rule through the StarPU pipeline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "../codelets/nlist/nlist_codelet.h"
#include "../dataflow/compute.h"

/* Every image of j within r of i, n over a box wide enough for any cell
 * here: the distances, in increasing order, into out (at most cap); returns
 * how many there are. Independent of the code under test (raw positions,
 * no wrapping, no cells). j == i leaves out n = 0. */
static int brute_images(const double *xi, const double *xj, int same, const double cell[9], const int pbc[3],
                        double r, double *out, int cap)
{
    int n = 0, R[3];
    for (int k = 0; k < 3; k++) R[k] = pbc[k] ? 8 : 0;
    for (int a = -R[0]; a <= R[0]; a++)
        for (int b = -R[1]; b <= R[1]; b++)
            for (int c = -R[2]; c <= R[2]; c++) {
                if (same && !a && !b && !c) continue;
                double d2 = 0.0;
                for (int k = 0; k < 3; k++) {
                    double d = xj[k] - xi[k] + a * cell[k] + b * cell[3 + k] + c * cell[6 + k];
                    d2 += d * d;
                }
                if (sqrt(d2) < r) {
                    if (n < cap) out[n] = sqrt(d2);
                    n++;
                }
            }
    for (int x = 1; x < n && x < cap; x++) /* insertion sort: few images */
        for (int y = x; y > 0 && out[y - 1] > out[y]; y--) {
            double t = out[y];
            out[y] = out[y - 1];
            out[y - 1] = t;
        }
    return n;
}

typedef struct nl_case {
    const char *name;
    double cell[9];
    int pbc[3];
    int natoms;
    double r_list;
    int drop_cell; /* place atoms in the cell, then bin as a cell-less cluster */
} nl_case;

/* A list of fronts only is packed (mdf_nl_list_head.packed): the rows that
 * did not overflow lie one after another from slot 0 in the order the
 * build met them, without gaps or overlaps, within the list's natoms x
 * slots; the other rows are walked from the cells and take no room. */
static void check_packed(const char *name, const mdf_nl_list_view *lv, int32_t slots, int32_t natoms)
{
    assert_int_equal(lv->head->packed, 1);
    const int64_t room = (int64_t)natoms * slots;
    uint8_t *taken = calloc((size_t)room, 1);
    int64_t used = 0, end = 0;
    for (int32_t li = 0; li < natoms; li++) {
        if (lv->n_up[li] + lv->n_down[li] > slots) continue;
        assert_int_equal(lv->n_down[li], 0);
        for (int32_t k = 0; k < lv->n_up[li]; k++) {
            const int64_t at = lv->row_at[li] + k;
            if (at < 0 || at >= room || taken[at])
                fail_msg("%s: row %d's entry %d at slot %lld: %s", name, li, k, (long long)at,
                         at < 0 || at >= room ? "outside the list" : "where another row is");
            taken[at] = 1;
            end = at + 1 > end ? at + 1 : end;
        }
        used += lv->n_up[li];
    }
    if (end != used) fail_msg("%s: %lld entries spread over %lld slots (not packed)", name, (long long)used, (long long)end);
    free(taken);
}

/* Rows of the half lists alone (up_only: MDF_MODEL_HALF_ROWS): each row's
 * front as the kernel's whole row has it (from a row wide enough for every
 * neighbour), no back, and overflow only past the slots. */
static void check_up_only(const nl_case *c, const mdf_frame *f, const mdf_sys_info *si, const mdf_nl_bins_view *v,
                          const mdf_nl_list_view *lv, int32_t slots, int32_t simd, int32_t a0, int32_t a1)
{
    const int32_t wide = 4096;
    uint32_t *ref = calloc((size_t)wide, sizeof *ref);
    int32_t overflowed = 0;
    for (int32_t i = a0; i < a1; i++) {
        const int32_t li = i - a0;
        int32_t wup = 0, wdown = 0;
        mdf_nl_build_atom(i, f->positions, v->offset, si, &v->grid[0], v->cell_start, v->sorted, v->cell_of,
                          c->r_list * c->r_list, wide, ref, &wup, &wdown);
        assert_true(wup + wdown <= wide);
        if (lv->n_up[li] != wup || lv->n_down[li] != 0)
            fail_msg("%s (sweep %d, up only): atom %d has %d+%d neighbours, want %d+0", c->name, simd, i,
                     lv->n_up[li], lv->n_down[li], wup);
        overflowed += wup > slots;
        if (wup > slots) continue;
        for (int32_t k = 0; k < wup; k++)
            if (mdf_nl_row(lv, li)[k] != ref[k])
                fail_msg("%s (sweep %d, up only): atom %d's entry %d is %u, the kernel's %u", c->name, simd, i, k,
                         mdf_nl_row(lv, li)[k], ref[k]);
    }
    free(ref);
    assert_int_equal(lv->head->overflowed, overflowed);
}

/* Rows of a slice [a0, a1) that own their pairs (owned: a slice under the
 * halo contract of a model flagged MDF_MODEL_HALO_OWNED): each row's front
 * holds the pairs mdf_nl_pair_owned gives it, in the order the kernel's
 * walk (mdf_nl_pairs) meets them, no back, overflow only past the slots;
 * and every pair of the system within r_list is owned by exactly one row
 * (counted over all the rows of the system, from both ends). */
static void check_owned(const nl_case *c, const mdf_frame *f, const mdf_sys_info *si, const mdf_nl_bins_view *v,
                        const mdf_nl_list_view *lv, int32_t slots, int32_t simd, int32_t a0, int32_t a1)
{
    const int32_t wide = 4096;
    uint32_t *ref = calloc((size_t)wide, sizeof *ref);
    int32_t overflowed = 0, across = 0, across_owned = 0;
    for (int32_t i = a0; i < a1; i++) {
        const int32_t li = i - a0;
        int32_t want = 0, j, n[3];
        double d[3];
        mdf_nl_pairs p;
        mdf_nl_pairs_begin(&p, i, f->positions, v->offset, &v->grid[0], v->cell_start, v->sorted, v->cell_of,
                           c->r_list * c->r_list);
        while (mdf_nl_pairs_next(&p, &j, n, d)) {
            const int out = j < a0 || j >= a1, mine = mdf_nl_pair_owned(i, j, n, a0, a1);
            across += out;
            across_owned += out && mine;
            /* The other end's answer is the opposite one (-n from j's side). */
            const int32_t back[3] = {-n[0], -n[1], -n[2]};
            const int32_t jlo = out ? (j < a0 ? 0 : a1) : a0, jhi = out ? (j < a0 ? a0 : si->natoms) : a1;
            if (mine == mdf_nl_pair_owned(j, i, back, jlo, jhi))
                fail_msg("%s: the pair (%d, %d) is owned by %s", c->name, i, j, mine ? "both ends" : "neither end");
            if (mine) {
                assert_true(want < wide);
                ref[want++] = mdf_nl_entry_make(&v->grid[0], j, n);
            }
        }
        if (lv->n_up[li] != want || lv->n_down[li] != 0)
            fail_msg("%s (sweep %d, owned): atom %d has %d+%d neighbours, want %d+0", c->name, simd, i,
                     lv->n_up[li], lv->n_down[li], want);
        overflowed += want > slots;
        if (want > slots) continue;
        for (int32_t k = 0; k < want; k++)
            if (mdf_nl_row(lv, li)[k] != ref[k])
                fail_msg("%s (sweep %d, owned): atom %d's entry %d is %u, the walk's %u", c->name, simd, i, k,
                         mdf_nl_row(lv, li)[k], ref[k]);
    }
    free(ref);
    assert_int_equal(lv->head->overflowed, overflowed);
    /* The pairs across the slice's edges split about evenly (parity). */
    if (across >= 200 && (across_owned < across / 4 || across_owned > 3 * across / 4))
        fail_msg("%s: the slice owns %d of its %d pairs across its edges", c->name, across_owned, across);
}

/* The CPU build codelet's lists of atoms [a0, a1) with sweep simd against
 * the kernel's (list: mdf_nl_build_atom's rows of every atom); up_only:
 * the half rows alone (check_up_only); owned (with up_only): rows that own
 * their pairs (check_owned). */
static void check_codelet_lists(const nl_case *c, const mdf_frame *fr, const mdf_sys_info *sip,
                                const mdf_nl_bins_view *vp, void *blob, const uint32_t *list, int32_t slots,
                                int32_t simd, int32_t a0, int32_t a1, int32_t up_only, int32_t owned)
{
    mdf_frame f = *fr;
    mdf_sys_info si = *sip;
    mdf_nl_bins_view v = *vp;
    size_t lbytes = mdf_nl_list_bytes(a1 - a0, slots);
    void *lblob = calloc(1, lbytes);
    mdf_nl_list_head *lh = (mdf_nl_list_head *)lblob;
    lh->natoms = a1 - a0;
    lh->atom_begin = a0;
    lh->slots = slots;
    v.grid[0].rebuilt = 1;
    struct starpu_vector_interface ifaces[5];
    memset(ifaces, 0, sizeof ifaces);
    ifaces[0].ptr = (uintptr_t)f.positions;
    ifaces[2].ptr = (uintptr_t)&si;
    ifaces[3].ptr = (uintptr_t)blob;
    ifaces[4].ptr = (uintptr_t)lblob;
    void *buffers[5] = {&ifaces[0], &ifaces[1], &ifaces[2], &ifaces[3], &ifaces[4]};
    mdf_nl_build_args args = {.work = 0, .r_list2 = c->r_list * c->r_list, .simd = simd, .up_only = up_only,
                              .owned = owned, .chunk = {.atom_begin = a0, .atom_end = a1, .sys_begin = 0, .sys_end = 1,
                                        .touch_begin = 0, .touch_end = si.natoms}};
    mdf_nl_build_cpu(buffers, &args);
    mdf_nl_list_view lv = mdf_nl_list_map(lblob);
    if (up_only) check_packed(c->name, &lv, slots, a1 - a0);
    else assert_int_equal(lv.head->packed, 0);
    if (owned) {
        check_owned(c, &f, &si, &v, &lv, slots, simd, a0, a1);
        free(lblob);
        return;
    }
    if (up_only) {
        check_up_only(c, &f, &si, &v, &lv, slots, simd, a0, a1);
        free(lblob);
        return;
    }
    int32_t overflowed = 0;
    for (int32_t i = a0; i < a1; i++) {
        const int32_t li = i - a0;
        const uint32_t *a = list + (size_t)i * (size_t)slots, *b = mdf_nl_row(&lv, li);
        int32_t up = lv.n_up[li], down = lv.n_down[li];
        int32_t wup = 0, wdown = 0;
        uint32_t *tmp = calloc((size_t)slots, sizeof *tmp);
        mdf_nl_build_atom(i, f.positions, v.offset, &si, &v.grid[0], v.cell_start, v.sorted, v.cell_of,
                          c->r_list * c->r_list, slots, tmp, &wup, &wdown);
        if (up != wup || down != wdown)
            fail_msg("%s (sweep %d): codelet gives atom %d %d+%d neighbours, kernel %d+%d", c->name, simd, i, up, down,
                     wup, wdown);
        overflowed += up + down > slots;
        if (up + down > slots) {
            free(tmp);
            continue;
        }
        for (int32_t k = 0; k < up + down; k++) {
            uint32_t e = k < up ? b[k] : b[slots - 1 - (k - up)];
            int found = 0;
            for (int32_t q = 0; q < up + down && !found; q++) found = (q < up ? a[q] : a[slots - 1 - (q - up)]) == e;
            if (!found) fail_msg("%s: codelet entry %u of atom %d not in the kernel's list", c->name, e, i);
            /* Entry for entry in the kernel's order (the GPU's lists): the
             * order of a row is the order its forces are summed in. */
            uint32_t want = k < up ? tmp[k] : tmp[slots - 1 - (k - up)];
            if (e != want)
                fail_msg("%s (sweep %d): atom %d's entry %d is %u from the codelet, %u from the kernel", c->name, simd, i,
                         k, e, want);
        }
        free(tmp);
    }
    assert_int_equal(lh->overflowed, overflowed);
    free(lblob);
}

/* Builds lists for every atom with `slots` slots and checks: each atom's
 * neighbour set equals the brute-force one (for atoms that fit), counts are
 * right for all atoms, each stored image gives the brute-force distance. */
static void check_case(const nl_case *c, int32_t slots, uint64_t seed)
{
    int zs[] = {18};
    mdf_frame f = tu_random(c->natoms, c->cell, c->pbc, 0.9, zs, 1, seed);
    /* Move atoms off the wrapped cell a little, as MD does. */
    uint64_t s = seed ^ 0xabcdefu;
    for (int64_t k = 0; k < 3 * f.natoms; k++) f.positions[k] += 3.0 * (tu_rand(&s) - 0.5);
    mdf_sys_info si;
    memset(&si, 0, sizeof si);
    si.natoms = (int32_t)f.natoms;
    if (!c->drop_cell) memcpy(si.cell, c->cell, sizeof si.cell);
    for (int k = 0; k < 3; k++) si.pbc[k] = c->pbc[k];
    if (!mdf_inv3(si.cell, si.inv_cell)) memset(si.inv_cell, 0, sizeof si.inv_cell);
    size_t bytes = mdf_nl_bins_bytes(si.natoms, 1);
    void *blob = calloc(1, bytes);
    ((mdf_nl_bins_head *)blob)->atom_cap = si.natoms;
    ((mdf_nl_bins_head *)blob)->sys_cap = 1;
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    mdf_nl_bin_system(f.positions, &si, 0, &v, c->r_list);
    uint32_t *list = calloc((size_t)si.natoms * (size_t)slots, sizeof *list);
    for (int32_t i = 0; i < si.natoms; i++) {
        int32_t up, down;
        uint32_t *mine = list + (size_t)i * (size_t)slots;
        int32_t count = mdf_nl_build_atom(i, f.positions, v.offset, &si, &v.grid[0], v.cell_start, v.sorted, v.cell_of,
                                          c->r_list * c->r_list, slots, mine, &up, &down);
        assert_int_equal(count, up + down);
        /* The brute-force images of each j (i's own with n != 0 included):
         * half of i's own images are "up", as are all of every j > i. */
        int32_t want = 0, want_up = 0;
        enum { CAP = 512 };
        double *want_d = calloc((size_t)si.natoms * CAP, sizeof *want_d);
        int *want_n = calloc((size_t)si.natoms, sizeof *want_n);
        for (int32_t j = 0; j < si.natoms; j++) {
            want_n[j] = brute_images(f.positions + 3 * i, f.positions + 3 * j, j == i, si.cell, c->pbc, c->r_list,
                                     want_d + (size_t)j * CAP, CAP);
            assert_true(want_n[j] <= CAP);
            want += want_n[j];
            want_up += j > i ? want_n[j] : (j == i ? want_n[j] / 2 : 0);
        }
        if (count != want || up != want_up)
            fail_msg("%s: atom %d has %d neighbours (%d up), brute force %d (%d up)", c->name, i, count, up, want, want_up);
        if (count > slots) {
            free(want_d);
            free(want_n);
            continue; /* overflowed: counted, not stored */
        }
        /* Each entry's distance is one of j's brute-force images, each used once. */
        char *used = calloc((size_t)si.natoms * CAP, 1);
        for (int32_t k = 0; k < count; k++) {
            uint32_t e = k < up ? mine[k] : mine[slots - 1 - (k - up)];
            const mdf_nl_grid *g = &v.grid[0];
            int32_t j = mdf_nl_entry_atom(g, e), n[3];
            assert_true(j >= 0 && j < si.natoms);
            double sh[3], d2 = 0.0;
            mdf_nl_entry_shift(g, e, si.cell, sh);
            mdf_nl_entry_image(g, e, n);
            for (int q = 0; q < 3; q++) {
                double d = f.positions[3 * j + q] + v.offset[3 * j + q] + sh[q] - f.positions[3 * i + q] -
                           v.offset[3 * i + q];
                d2 += d * d;
            }
            int found = -1;
            for (int q = 0; q < want_n[j] && found < 0; q++)
                if (!used[(size_t)j * CAP + q] && fabs(sqrt(d2) - want_d[(size_t)j * CAP + q]) < 1e-9) found = q;
            if (found < 0) fail_msg("%s: atom %d, entry %d (j %d): no brute-force image at %.12g", c->name, i, k, j, sqrt(d2));
            used[(size_t)j * CAP + found] = 1;
            assert_true(mdf_nl_pair_is_up(i, j, n) == (k < up));
        }
        free(used);
        free(want_d);
        free(want_n);
    }
    /* The CPU codelet (cell-by-cell sweep) must find the same lists, with
     * each sweep this CPU runs, for the whole system and for a slice. */
    for (int32_t simd = MDF_NL_SIMD_GENERIC; simd <= MDF_NL_SIMD_AVX512; simd++)
        for (int part = 0; part < 2; part++) {
            if (!mdf_nl_simd_supported(simd)) {
                print_message("%s: this CPU lacks list sweep %d, not tested\n", c->name, simd);
                continue;
            }
            int32_t a0 = part ? si.natoms / 3 : 0, a1 = part ? 2 * si.natoms / 3 : si.natoms;
            for (int32_t up_only = 0; up_only < 2; up_only++)
                check_codelet_lists(c, &f, &si, &v, blob, list, slots, simd, a0, a1, up_only, 0);
            if (part) check_codelet_lists(c, &f, &si, &v, blob, list, slots, simd, a0, a1, 1, 1);
        }
    free(list);
    free(blob);
    mdf_frame_free(&f);
}

static void test_against_brute_force(void **state)
{
    (void)state;
    const nl_case cases[] = {
        {"cubic", {14, 0, 0, 0, 14, 0, 0, 0, 14}, {1, 1, 1}, 200, 4.5, 0},
        {"triclinic", {15, 0, 0, 4.0, 14, 0, -3.0, 2.5, 13}, {1, 1, 1}, 220, 4.0, 0},
        {"strongly skewed", {12, 0, 0, 6.0, 11, 0, 5.0, 5.0, 12}, {1, 1, 1}, 150, 3.4, 0},
        {"exactly half-width cells", {9, 0, 0, 0, 9, 0, 0, 0, 9}, {1, 1, 1}, 60, 4.4, 0},
        {"slab pbc T T F", {13, 0, 0, 2.0, 13, 0, 0, 0, 20}, {1, 1, 0}, 180, 4.0, 0},
        {"wire pbc F F T", {20, 0, 0, 0, 20, 0, 0, 0, 11}, {0, 0, 1}, 120, 4.0, 0},
        {"open cluster", {25, 0, 0, 0, 25, 0, 0, 0, 25}, {0, 0, 0}, 250, 5.0, 0},
        {"open, no cell", {30, 0, 0, 0, 30, 0, 0, 0, 30}, {0, 0, 0}, 300, 5.5, 1},
        {"single atom", {10, 0, 0, 0, 10, 0, 0, 0, 10}, {1, 1, 1}, 1, 4.0, 0},
        /* Small cells: several images of a neighbour, and of the atom itself. */
        {"fcc primitive, 1 atom, r 2.6x width", {0, 1.805, 1.805, 1.805, 0, 1.805, 1.805, 1.805, 0}, {1, 1, 1}, 1, 5.5, 0},
        {"triclinic 2 atoms, r 3x width", {3.0, 0, 0, 1.1, 2.8, 0, -0.7, 0.9, 3.3}, {1, 1, 1}, 2, 7.9, 0},
        {"cubic 4 atoms, r 1.7x width", {3.61, 0, 0, 0, 3.61, 0, 0, 0, 3.61}, {1, 1, 1}, 4, 6.0, 0},
        {"thin along c (3+ cells along a, b)", {12, 0, 0, 1.0, 12, 0, 0, 0, 3.0}, {1, 1, 1}, 12, 4.0, 0},
        {"narrow slab pbc T T F", {2.9, 0, 0, 0.8, 3.1, 0, 0, 0, 9}, {1, 1, 0}, 3, 6.5, 0},
        {"between 1 and 2 r wide", {6.5, 0, 0, 0, 7.0, 0, 0, 0, 5.5}, {1, 1, 1}, 6, 4.0, 0},
        /* Two cells along each direction: the CPU build gathers only the
         * images within one cell of home (nlist_cpu.c narrow_images); the
         * lists must stay entry for entry the kernel's. Triclinic, and
         * cells exactly r_list wide (no narrowing: the margin keeps two). */
        {"two cells each way, triclinic", {10, 0, 0, 2.5, 9.6, 0, -1.5, 1.2, 10.2}, {1, 1, 1}, 80, 4.2, 0},
        {"two cells exactly r wide", {8.8, 0, 0, 0, 8.8, 0, 0, 0, 8.8}, {1, 1, 1}, 50, 4.4, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nl_case c = cases[k];
        for (uint64_t seed = 1; seed <= 3; seed++) {
            check_case(&c, 400, seed * 1000 + k);
            check_case(&c, 3, seed * 1000 + k); /* most atoms overflow */
        }
    }
}

/* ---- through the pipeline ------------------------------------------------ */

#include "../dataflow/batch_internal.h"

static void move_atom(mdf_batch *b, size_t system, int atom, double dx)
{
    int64_t slot = b->sys_slot[system];
    const mdf_shard *sh = mdf_batch_slot_shard(b, slot);
    assert_int_equal(starpu_data_acquire(sh->pos, STARPU_RW), 0);
    b->pos[3 * (mdf_batch_slot_atom(b, slot) + atom)] += dx;
    starpu_data_release(sh->pos);
}

static void evaluate(mdf_compute *c, mdf_batch *b)
{
    for (int k = 0; k < mdf_batch_nshards(b); k++) TU_CALL(mdf_compute_submit, c, k, 0);
    starpu_task_wait_for_all();
}

/* A system's lists are rebuilt only when one of its own atoms moved more
 * than skin/2 since the last build. */
static void test_rebuild_rule(void **state)
{
    (void)state;
    mdf_frame f[3];
    for (int i = 0; i < 3; i++) f[i] = tu_fcc(3, 3, 3, 5.26, 18, 0.0, 0.02, 10 + (uint64_t)i);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = 2;
    mdf_batch *b = NULL;
    TU_CALL(mdf_batch_create, f, 3, &bc, &b);
    mdf_lj_config lj = tu_argon(6.0, 0);
    mdf_model *m = NULL;
    TU_CALL(mdf_model_create_lj, &lj, &m);
    mdf_compute_config cc;
    mdf_compute_config_init(&cc);
    cc.skin = 1.0;
    mdf_compute *c = NULL;
    TU_CALL(mdf_compute_create, b, m, &cc, &c);
    evaluate(c, b);
    for (size_t i = 0; i < 3; i++) assert_int_equal(mdf_compute_system_rebuilds(c, i), 1);
    move_atom(b, 1, 5, 0.49); /* within skin/2 = 0.5 of the reference */
    evaluate(c, b);
    for (size_t i = 0; i < 3; i++) assert_int_equal(mdf_compute_system_rebuilds(c, i), 1);
    move_atom(b, 1, 5, 0.02); /* now 0.51 away */
    evaluate(c, b);
    assert_int_equal(mdf_compute_system_rebuilds(c, 0), 1);
    assert_int_equal(mdf_compute_system_rebuilds(c, 1), 2);
    assert_int_equal(mdf_compute_system_rebuilds(c, 2), 1);
    mdf_compute_destroy(c);

    /* cutoff + skin over half the periodic width (15.78 Å / 2): the cell's
     * images are in the lists (small cells) ... */
    cc.skin = 2.0;
    TU_CALL(mdf_compute_create, b, m, &cc, &c);
    evaluate(c, b);
    mdf_compute_destroy(c);
    /* ... up to MDF_NL_MAX_REACH (16) widths; beyond, a clear error. */
    cc.skin = 16 * 15.78 - 6.0 + 1.0;
    mdf_error err;
    mdf_error_clear(&err);
    assert_int_equal(mdf_compute_create(b, m, &cc, &c, &err), MDF_ERR_INVALID);
    if (!strstr(err.message, "more than 16 times the periodic width") || !strstr(err.message, "system 0"))
        fail_msg("unexpected message: %s", err.message);
    mdf_model_destroy(m);
    mdf_batch_destroy(b);
    for (int i = 0; i < 3; i++) mdf_frame_free(&f[i]);
}

/* Binning a non-finite position (a run that exploded, before the NaN check
 * reports it): the cell index, the grid size and the image code clamp in
 * floating point, never converting a NaN, an infinity or anything beyond
 * int32 to int (undefined; this program is built with UBSan's
 * float-cast-overflow check, which stops it). Finite positions get the cells
 * they always got. */
static void test_nonfinite_positions(void **state)
{
    (void)state;
    mdf_nl_grid g;
    memset(&g, 0, sizeof g);
    g.n[0] = 4;
    g.n[1] = 5;
    g.n[2] = 1;
    for (int k = 0; k < 3; k++) {
        g.lo[k] = -0.25;
        g.span[k] = 1.5;
    }
    int32_t c[3];
    for (double x = -3.0; x <= 3.0; x += 1.0 / 64.0) { /* as before: (int)floor, then clamped */
        double u[3] = {x, x * 0.75, -x};
        int32_t idx = mdf_nl_cell_index(&g, u, c);
        for (int k = 0; k < 3; k++) {
            int32_t ck = (int32_t)floor((u[k] - g.lo[k]) / g.span[k] * (double)g.n[k]);
            ck = ck < 0 ? 0 : (ck >= g.n[k] ? g.n[k] - 1 : ck);
            assert_int_equal(c[k], ck);
        }
        assert_int_equal(idx, (c[0] * g.n[1] + c[1]) * g.n[2] + c[2]);
    }
    const double bad[] = {NAN, -NAN, INFINITY, -INFINITY, 1e300, -1e300, 3e9, -3e9};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double u[3] = {bad[i], 0.5, bad[i]};
        int32_t idx = mdf_nl_cell_index(&g, u, c);
        for (int k = 0; k < 3; k++) assert_true(c[k] >= 0 && c[k] < g.n[k]);
        assert_true(idx >= 0 && idx < g.n[0] * g.n[1] * g.n[2]);
        int up = bad[i] > 0.0; /* NaN, -Inf and below the grid: cell 0 */
        assert_int_equal(c[0], up ? g.n[0] - 1 : 0);
    }
    /* A non-finite cell gives a NaN width: one cell along it. */
    for (int k = 0; k < 9; k++) g.inv_basis[k] = k == 0 ? NAN : (k % 4 == 0 ? 0.1 : 0.0);
    for (int k = 0; k < 3; k++) g.span[k] = 1.0;
    mdf_nl_grid_dims(&g, 2.5, 1000);
    assert_int_equal(g.n[0], 1);
    assert_true(g.n[1] >= 1 && g.n[2] >= 1);
    /* The image of a NaN displacement is no image in {-1,0,1}^3. */
    mdf_sys_info si;
    memset(&si, 0, sizeof si);
    for (int k = 0; k < 3; k++) {
        si.pbc[k] = 1;
        si.cell[4 * k] = 10.0;
        si.inv_cell[4 * k] = 0.1;
    }
    double xi[3] = {1.0, 1.0, 1.0}, xj[3] = {NAN, 2.0, INFINITY}, d[3];
    assert_int_equal(mdf_nl_min_image(xi, xj, &si, d), -1);
    xj[0] = 9.5;
    xj[2] = 1.5;
    assert_int_equal(mdf_nl_min_image(xi, xj, &si, d), 0 * 9 + 1 * 3 + 1);
}

/* Two periodic systems in one chunk, with packed lists of fronts (up_only):
 * each system's rows stay in its own room (its rows x slots), so that
 * when the second system alone is rebuilt (it moved), the first one's rows
 * are left as they were, entry for entry, and the second's are the
 * kernel's for its new positions. */
static void test_packed_partial_rebuild(void **state)
{
    (void)state;
    const double cell[9] = {14, 0, 0, 0, 14, 0, 0, 0, 14};
    const int pbc[3] = {1, 1, 1}, zs[] = {18};
    const double r_list = 4.5;
    const int32_t slots = 96, n[2] = {200, 150};
    mdf_frame f[2] = {tu_random(n[0], cell, pbc, 0.9, zs, 1, 11), tu_random(n[1], cell, pbc, 0.9, zs, 1, 12)};
    const int32_t natoms = n[0] + n[1];
    double *pos = malloc(sizeof(double) * 3 * (size_t)natoms);
    memcpy(pos, f[0].positions, sizeof(double) * 3 * (size_t)n[0]);
    memcpy(pos + 3 * n[0], f[1].positions, sizeof(double) * 3 * (size_t)n[1]);
    mdf_sys_info si[2];
    memset(si, 0, sizeof si);
    for (int s = 0; s < 2; s++) {
        si[s].natoms = n[s];
        si[s].atom_start = s ? n[0] : 0;
        memcpy(si[s].cell, cell, sizeof si[s].cell);
        for (int k = 0; k < 3; k++) si[s].pbc[k] = pbc[k];
        assert_true(mdf_inv3(si[s].cell, si[s].inv_cell));
    }
    void *blob = calloc(1, mdf_nl_bins_bytes(natoms, 2));
    ((mdf_nl_bins_head *)blob)->atom_cap = natoms;
    ((mdf_nl_bins_head *)blob)->sys_cap = 2;
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    void *lblob = calloc(1, mdf_nl_list_bytes(natoms, slots));
    mdf_nl_list_head *lh = (mdf_nl_list_head *)lblob;
    lh->natoms = natoms;
    lh->slots = slots;
    struct starpu_vector_interface ifaces[5];
    memset(ifaces, 0, sizeof ifaces);
    ifaces[0].ptr = (uintptr_t)pos;
    ifaces[2].ptr = (uintptr_t)si;
    ifaces[3].ptr = (uintptr_t)blob;
    ifaces[4].ptr = (uintptr_t)lblob;
    void *buffers[5] = {&ifaces[0], &ifaces[1], &ifaces[2], &ifaces[3], &ifaces[4]};
    mdf_nl_build_args args = {.r_list2 = r_list * r_list, .simd = MDF_NL_SIMD_GENERIC, .up_only = 1,
                              .chunk = {.atom_begin = 0, .atom_end = natoms, .sys_begin = 0, .sys_end = 2,
                                        .touch_begin = 0, .touch_end = natoms}};
    mdf_nl_list_view lv = mdf_nl_list_map(lblob);
    uint32_t *first = calloc((size_t)n[0] * (size_t)slots, sizeof *first), *ref = calloc(4096, sizeof *ref);
    int32_t *first_up = calloc((size_t)n[0], sizeof *first_up);
    for (int round = 0; round < 2; round++) {
        for (int s = 0; s < 2; s++) {
            v.grid[s].rebuilt = round == 0 || s == 1;
            if (v.grid[s].rebuilt) mdf_nl_bin_system(pos, &si[s], s, &v, r_list);
        }
        mdf_nl_build_cpu(buffers, &args);
        assert_int_equal(lh->packed, 1);
        assert_int_equal(lh->overflowed, 0);
        uint8_t *taken = calloc((size_t)natoms * (size_t)slots, 1);
        for (int s = 0; s < 2; s++)
            for (int32_t i = si[s].atom_start; i < si[s].atom_start + n[s]; i++) {
                /* Inside the system's own room, no two rows on one slot. */
                const int64_t room0 = (int64_t)si[s].atom_start * slots, room1 = room0 + (int64_t)n[s] * slots;
                for (int32_t k = 0; k < lv.n_up[i]; k++) {
                    const int64_t at = lv.row_at[i] + k;
                    if (at < room0 || at >= room1 || taken[at])
                        fail_msg("system %d, row %d, entry %d at slot %lld: outside its room or shared", s, i, k,
                                 (long long)at);
                    taken[at] = 1;
                }
                const uint32_t *row = mdf_nl_row(&lv, i);
                if (s == 0 && round == 1) { /* not rebuilt: as it was */
                    if (lv.n_up[i] != first_up[i] || memcmp(row, first + (size_t)i * slots, sizeof *row * (size_t)lv.n_up[i]))
                        fail_msg("system 0, row %d changed when system 1 alone was rebuilt", i);
                    continue;
                }
                int32_t up = 0, down = 0;
                mdf_nl_build_atom(i, pos, v.offset, &si[s], &v.grid[s], v.cell_start + si[s].atom_start + s, v.sorted,
                                  v.cell_of, r_list * r_list, 4096, ref, &up, &down);
                if (lv.n_up[i] != up || lv.n_down[i] != 0 || memcmp(row, ref, sizeof *row * (size_t)up))
                    fail_msg("round %d, system %d, row %d: %d+%d entries, the kernel's %d+0 (or other entries)", round,
                             s, i, lv.n_up[i], lv.n_down[i], up);
                if (s == 0) {
                    first_up[i] = up;
                    memcpy(first + (size_t)i * slots, row, sizeof *row * (size_t)up);
                }
            }
        free(taken);
        /* System 1 moves (more than the skin: its next build differs). */
        uint64_t seed = 99;
        for (int32_t k = 3 * n[0]; k < 3 * natoms; k++) pos[k] += 2.0 * (tu_rand(&seed) - 0.5);
    }
    free(first);
    free(first_up);
    free(ref);
    free(lblob);
    free(blob);
    free(pos);
    mdf_frame_free(&f[0]);
    mdf_frame_free(&f[1]);
}

int main(void)
{
    tu_start(NULL, 2, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_brute_force),
        cmocka_unit_test(test_packed_partial_rebuild),
        cmocka_unit_test(test_rebuild_rule),
        cmocka_unit_test(test_nonfinite_positions),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    tu_stop();
    return failed ? 1 : 0;
}

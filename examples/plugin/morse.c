/* Morse pair model — the definition: its name, its parameters (with
 * defaults, ranges, units and help, which `mdflow models`, the CLI's
 * --param and a workflow's params: read from the table alone), and the
 * setup that turns them into the blob the codelets read.
 *
 * Defaults: copper, after Girifalco & Weizer, Phys. Rev. 114, 687 (1959)
 * (D 0.3429 eV, a 1.3588 1/Å, r0 2.866 Å), cut off at 6 Å. */
#include <math.h>
#include <stdlib.h>
#include "morse.h"
#include "morse_kernel.h"

/* The user's parameters: one field per table entry below. */
typedef struct morse_config {
    double D, a, r0, cutoff;
    int32_t shift; /* bools are int32_t fields */
} morse_config;

static const mdf_param_def morse_param_defs[] = {
    MDF_PARAM_DOUBLE(morse_config, D, 0.3429, 0.0, INFINITY, 0u, "eV", "well depth"),
    MDF_PARAM_DOUBLE(morse_config, a, 1.3588, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "1/Å",
                     "inverse width of the well (stiffness)"),
    MDF_PARAM_DOUBLE(morse_config, r0, 2.866, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "Å", "equilibrium pair distance"),
    MDF_PARAM_DOUBLE(morse_config, cutoff, 6.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "Å",
                     "pairs at or beyond this distance do not interact"),
    MDF_PARAM_BOOL(morse_config, shift, 0, "shift each pair's energy to zero at the cutoff"),
    MDF_PARAM_END};

/* Every value is range-checked by mdflow before setup is called; setup
 * checks what involves several of them, and fills the blob. */
static mdf_status morse_setup(const void *params, const mdf_model_species *species, mdf_model_setup *out,
                              mdf_error *err)
{
    (void)species; /* no per-element rows: one parameter set for every element */
    const morse_config *c = (const morse_config *)params;
    if (!(c->cutoff > c->r0))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "model morse: cutoff %g Å must exceed r0 %g Å (else the well is cut away): raise cutoff",
                             c->cutoff, c->r0);
    morse_params *p = malloc(sizeof *p);
    if (!p) return mdf_error_set(err, MDF_ERR_NOMEM, "model morse: no memory for its parameters");
    *p = (morse_params){.D = c->D, .a = c->a, .r0 = c->r0, .rc2 = c->cutoff * c->cutoff, .eshift = 0.0};
    if (c->shift) p->eshift = morse_energy(p, c->cutoff);
    out->blob = p; /* mdflow frees it with the model */
    out->blob_size = sizeof *p;
    out->cutoff = c->cutoff;
    /* Sizes the neighbour-list slots: fcc with nearest neighbours at r0 has
     * √2/r0³ atoms per Å³; half again for compressed systems. Denser ones
     * stay correct (overflowing atoms are walked from the cells). */
    out->density_hint = 1.5 * sqrt(2.0) / (c->r0 * c->r0 * c->r0);
    out->all_elements = 1;
    return MDF_OK;
}

const mdf_model_def morse_model_def = {
    .api_version = MDFLOW_API_VERSION,
    .name = "morse",
    .summary = "Morse pair potential D[(1 - exp(-a(r - r0)))^2 - 1] (example plugin)",
    .params = morse_param_defs,
    .params_size = sizeof(morse_config),
    .setup = morse_setup,
    .cpu_func = morse_cpu,
    .cpu_func_name = "morse_cpu",
#ifdef PLUGIN_WITH_CUDA
    .cuda_func = morse_cuda,
#endif
};

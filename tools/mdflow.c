/* mdflow — the command-line program.
 *
 *   mdflow                 the built-in default workflow (mdflow run)
 *   mdflow run [FILE]      a workflow file (YAML): stages, composition, sampler,
 *                          outputs; without FILE examples/relax_md.yaml;
 *                          --resume continues from its checkpoint
 *   mdflow md [options]    molecular dynamics of every structure of a file
 *   mdflow relax [options] geometry optimisation of every structure of a file
 *   mdflow methods         the registered integrators and optimisers, with their parameters
 *   mdflow models          the registered models, with their parameters
 *   mdflow sched [FILE]    a workflow under each StarPU scheduling policy (tools/sched.c)
 *   mdflow perfmodels      the codelets' saved performance models
 *   mdflow help | --help   usage
 *
 * Plugins (--plugin PATH.so, MDFLOW_PLUGIN_PATH, a workflow's plugins:) are
 * loaded before a model or method is looked up, so their entries work
 * everywhere the built-ins do.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "formats.h"
#include "paths.h"
#include "plot.h"
#include "progress.h"
#include "runner.h"
#include "sched.h"
#include "trajectory.h"
#include "workflow.h"
#include "mdflow/mdflow.h"
#include "mdflow/extension.h"
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef MDF_HAVE_KIM
#include "../codelets/kim/kim_internal.h"
#endif

#ifndef MDF_PKGDATADIR
#define MDF_PKGDATADIR "/usr/local/share/mdflow"
#endif
#ifndef MDF_SRCDIR
#define MDF_SRCDIR "."
#endif
#define MDF_DEFAULT_WORKFLOW "examples/relax_md.yaml"

typedef enum command { CMD_MD, CMD_RELAX } command;

/* An option that sets a model's or a method's parameter, kept in
 * command-line order until the plugins are loaded and the model and method
 * are known (resolve_settings). */
#define CLI_SETTINGS_MAX 128
#define CLI_PLUGINS_MAX 32
typedef struct cli_setting {
    int opt;                  /* OPT_PARAM, a shorthand (OPT_FRICTION, OPT_EPS, ...) */
    const char *text;         /* its argument */
} cli_setting;

typedef struct md_options {
    command cmd;
    const char *input, *output, *thermo_file, *log_file, *sched, *model, *ensemble;
    const char *format, *input_format, *lammps_types; /* NULL: by the file's extension */
    fmt_kind in_fmt, out_fmt;
    int ntype_z;
    int32_t type_z[FMT_TYPES_MAX]; /* --lammps-types */
    int nsettings;
    cli_setting settings[CLI_SETTINGS_MAX];
    int nplugins;
    const char *plugins[CLI_PLUGINS_MAX];
    /* resolved by parse_options */
    runner_model model_cfg;   /* the model and its settings */
    const mdf_method *method; /* the integrator or optimiser */
    mdf_md_config md;         /* md: integrator, dt, steps, thermo; params and method_params for both */
    double temperature;
    int keep_velocities;
    const char *velocity_dist; /* --velocity-dist NAME, or NULL */
    int64_t seed;
    int64_t shards;
    int64_t ncpus, ncuda;
    int quiet;
    double progress_every;    /* --progress-every S */
    /* relax */
    const char *optimizer;
    double fmax, energy_change;
    int64_t max_steps;
    int cell;                 /* --cell: relax the cell too (fire_cell, lbfgs_cell) */
    int pressure_given;       /* --pressure seen */
    double smax;              /* GPa, with --cell */
    /* hooks */
    runner_trajectory traj;   /* --trajectory, --trajectory-every */
    int64_t log_every;
    int nan_check, freeze;
    double max_force, drift;
    int64_t wrap_every;
} md_options;

static void usage_common(FILE *fp)
{
    fprintf(fp,
            "  --input FILE          structures: extended XYZ (.xyz, .extxyz; one or many frames), HDF5\n"
            "                        structures (.h5, .hdf5) or a LAMMPS data file (.data, .lmp)\n"
            "  --output FILE         final structures, in the format of the name: .xyz/.extxyz extended XYZ\n"
            "                        (info keys mdf_status, mdf_step), .h5/.hdf5 HDF5 structures, .h5md\n"
            "                        H5MD, .data/.lmp LAMMPS data (one system; several: put {id} in the\n"
            "                        name), .dump/.lammpstrj LAMMPS dump (custom style, one block a system)\n"
            "  --format NAME         --output's format whatever its name: xyz, h5, h5md, lammps-data,\n"
            "                        lammps-dump (an unknown extension without it is an error)\n"
            "  --input-format NAME   --input's format whatever its name: xyz, h5, lammps-data\n"
            "  --lammps-types A,B    elements of a LAMMPS data file's atom types 1, 2, ... (else from the\n"
            "                        '# Cu' comments of its Masses section, else the nearest element mass)\n"
            "  --log FILE            per-system CSV log: step,system_id,status,energy_eV,fmax_eV_per_A,\n"
            "                        temperature_K,pressure_bar,volume_A3 (the last two empty unless\n"
            "                        periodic in x, y and z; mdflow plot FILE draws it)\n"
            "  --log-every N         a CSV row per system every N steps (default: md 10, relax 1)\n"
            "  --trajectory FILE     frames every --trajectory-every steps from step 0, and each system's\n"
            "                        last state: FILE.h5md (H5MD; a name with {id}: a file per system,\n"
            "                        what MDAnalysis reads), FILE.h5 (HDF5 structures), FILE.xyz\n"
            "                        (extended XYZ, by step then system, written at the end)\n"
            "  --trajectory-every N  steps between frames (default: md 10, relax 1)\n"
            "  --model NAME          interatomic model: lj (Lennard-Jones, default), eam:FILE (a LAMMPS\n"
            "                        EAM file; NAME:FILE is --model NAME --param file=FILE; eam/alloy:FILE,\n"
            "                        eam/fs:FILE name the file's format, plain eam takes it from the\n"
            "                        file's name), kim:NAME (an installed OpenKIM model, mdflow models\n"
            "                        --kim; --model kim --param name=NAME) or any registered model\n"
            "                        (mdflow models; a plugin's, with --plugin)\n"
            "  --param NAME=VALUE    a parameter of the model or of the method (repeatable), e.g.\n"
            "                        --param friction_per_fs=0.02, --param sigma=3.4; a name both take is\n"
            "                        written model.NAME or method.NAME (mdflow models, mdflow methods)\n"
            "  --plugin PATH.so      load a plugin first (repeatable; also MDFLOW_PLUGIN_PATH, ':'-separated\n"
            "                        files or folders of *.so)\n"
            "  --lj-epsilon E        eV, for every element of the input; --param epsilon=E with --model lj\n"
            "  --lj-sigma S          Å (--param sigma=S). Without these or --lj-species, lj has argon's\n"
            "                        parameters (0.0104 eV, 3.40 Å) for argon only: another element\n"
            "                        is refused (exit 2)\n"
            "  --lj-cutoff RC        Å (default 2.5 sigma; --param cutoff=RC)\n"
            "  --lj-species SYM:E:S:RC   per-element parameters (repeatable; replaces the three above)\n"
            "  --lj-pair A:B:E:S:RC  explicit pair (default: Lorentz-Berthelot mixing, eps = sqrt(eps_A eps_B),\n"
            "                        sigma = (sigma_A + sigma_B)/2, and cutoff max(rc_A, rc_B), not LAMMPS's\n"
            "                        arithmetic (rc_A + rc_B)/2: a warning says so when the cutoffs differ)\n"
            "  --lj-shift            shift pair energies to zero at the cutoff (--param shift=true)\n"
            "  --nan-check           stop with an error naming the system, field and step on NaN/Inf\n"
            "  --max-force F         clamp every atom's force to F eV/Å (direction kept)\n"
            "  --freeze              keep atoms flagged in the input (\"fixed\" or ASE's \"move_mask\"\n"
            "                        column) in place; automatic when the input has such a column\n"
            "  --skin A              neighbour-list skin, Å (default 1.0)\n"
            "  --rebuild-every N     consider rebuilding a system's lists only every N steps since its\n"
            "                        last build (LAMMPS's neigh_modify every N delay 0; default 1)\n"
            "  --rebuild-check yes|no  yes (default): rebuild then only if an atom moved more than\n"
            "                        skin/2; no: rebuild every N steps whatever the atoms did (LAMMPS's\n"
            "                        check no, as in its bench/in.lj: pairs that come within the cutoff\n"
            "                        between builds are missed)\n"
            "  --shards N            shards of the batch (default: from workers and size)\n"
            "  --chunk-atoms N       split a shard's model work above N atoms (default: automatic:\n"
            "                        systems above 2048 atoms are sliced)\n"
            "  --window N            steps in flight at most (default 16)\n"
            "  --sched NAME          StarPU scheduler (STARPU_SCHED wins), e.g. eager, lws, dmda; an\n"
            "                        unknown name (here or in STARPU_SCHED) is refused, listing them\n"
            "  --ncpus N, --ncuda N  StarPU workers (STARPU_NCPU/STARPU_NCUDA win)\n"
            "  --progress-every S    progress on stderr (systems done / in flight / waiting, steps/s,\n"
            "                        atom-steps/s, elapsed, ETA): on a terminal one line rewritten in\n"
            "                        place, at most 4 times a second; otherwise a line every S seconds\n"
            "                        (default 10; 0: none). --quiet: no progress line\n"
            "  --help                this text\n");
}

static void usage_md(FILE *fp)
{
    fprintf(fp,
            "usage: mdflow md --input FILE.xyz [options]\n"
            "Molecular dynamics of every structure in FILE.xyz, all at once, as a StarPU task graph.\n\n"
            "  --ensemble NAME       nve (velocity Verlet, default), langevin (BAOAB), nose-hoover\n"
            "                        (chain), bussi (stochastic velocity rescaling), npt (isotropic\n"
            "                        stochastic cell rescaling + Bussi; only systems periodic in x, y and z\n"
            "                        change volume, the others run at constant volume (NVT) under its\n"
            "                        thermostat, with a warning)\n"
            "  --integrator NAME     any registered method by name (see mdflow methods)\n"
            "  --steps N             steps to run (default 100)\n"
            "  --dt FS               time step in fs (default 1.0)\n"
            "  --temperature K       thermostat target; also draws Maxwell-Boltzmann velocities at K\n"
            "                        (default: keep the file's velocities; required for nvt/npt)\n"
            "  --keep-velocities     with --temperature, keep the file's velocities\n"
            "  --velocity-dist NAME  with --temperature: gaussian (Maxwell-Boltzmann, default) or uniform\n"
            "                        (each component uniform with the same variance, as LAMMPS's\n"
            "                        velocity create does by default; to start as a LAMMPS input does)\n"
            "  --seed N              random seed for velocities and thermostats (default 1)\n"
            "  --friction G          Langevin friction, 1/fs (default 0.01; --param friction_per_fs=G)\n"
            "  --tau-t FS            Bussi / Nose-Hoover / NPT thermostat time, fs (default 100;\n"
            "                        the method's tau_t_fs, else its tau_fs)\n"
            "  --chain N             Nose-Hoover chain length (default 3; --param chain=N)\n"
            "  --pressure BAR        NPT target pressure, bar (default 1; --param pressure_bar=BAR)\n"
            "  --tau-p FS            NPT barostat time, fs (default 1000; --param tau_p_fs=FS)\n"
            "  --compressibility B   NPT isothermal compressibility, 1/bar (default 4.5e-5;\n"
            "                        --param compressibility_per_bar=B)\n"
            "                        A method's other parameters: --param NAME=VALUE (mdflow methods)\n"
            "  --thermo N            a thermo row every N steps (default steps/10; 0: none)\n"
            "                        Temperatures (thermo rows, --log) are 2K/(Nf kB) per system, and the\n"
            "                        thermostats hold K at Nf kT/2: Nf = 3N - 3 (nve, nose-hoover, bussi,\n"
            "                        npt), 3N (langevin), 3 per free atom when atoms are frozen\n"
            "                        Press(bar) (instantaneous, (2 KE + virial)/(3V), as LAMMPS's press) and\n"
            "                        Volume(A^3) columns for systems periodic in x, y and z (\"-\" for\n"
            "                        the others); batch totals: mean pressure, summed volume\n"
            "  --thermo-per-system   one row per system instead of batch totals\n"
            "  --thermo-file FILE    write thermo rows to FILE (default: standard output)\n"
            "  --quiet               no thermo rows on standard output (--thermo-file still written)\n"
            "                        and no progress line\n"
            "  --wrap N              wrap positions into the cell every N steps\n"
            "  --drift-warn X        warn once per system whose conserved energy drifts by more than\n"
            "                        X eV/atom\n");
    usage_common(fp);
}

static void usage_relax(FILE *fp)
{
    fprintf(fp,
            "usage: mdflow relax --input FILE.xyz [options]\n"
            "Geometry optimisation of every structure in FILE.xyz, all at once, each system on its own:\n"
            "a system stops as soon as it meets every criterion; the others go on.\n\n"
            "  --optimizer NAME      fire (ASE's FIRE, default), fire2 (FIRE 2.0), lbfgs (ASE's LBFGS),\n"
            "                        gd (gradient descent). fire2 is mass-less and evaluates the forces\n"
            "                        once per step (none after the half step back; mixing from |v| after\n"
            "                        the kick): not LAMMPS's min_style fire (see mdflow methods), or any\n"
            "                        registered optimiser; its parameters with --param NAME=VALUE, e.g.\n"
            "                        --param dt=0.05 --param maxstep=0.1 (fire; mdflow methods lists them)\n"
            "  --fmax F              converged when the largest atomic force is <= F eV/Å (default 0.05)\n"
            "  --energy-change E     and |E - E_previous| <= E eV (default: not used)\n"
            "  --cell                relax the cell too (variable-cell relaxation: ASE's FrechetCellFilter\n"
            "                        form, the cell's degrees of freedom the log of the deformation\n"
            "                        gradient): --optimizer fire becomes fire_cell, lbfgs lbfgs_cell.\n"
            "                        Every system must be periodic in x, y and z\n"
            "  --pressure P          with --cell: target hydrostatic pressure, GPa (default 0;\n"
            "                        --param pressure_GPa=P). Not md's --pressure, which is in bar\n"
            "  --smax S              with --cell: converged also when every stress component is within\n"
            "                        S GPa of the target, max |sigma_ij + P delta_ij| <= S, the stress\n"
            "                        sigma = -virial/V (default 0.01)\n"
            "  --max-steps N         give up after N steps (default 1000); unconverged systems keep\n"
            "                        status 0 in --output and are listed\n"
            "  --quiet               no progress line\n");
    usage_common(fp);
}

static void usage_main(FILE *fp)
{
    fprintf(fp,
            "usage: mdflow [COMMAND] [options]\n"
            "Batched molecular dynamics and geometry optimisation of many atomic systems as StarPU task\n"
            "graphs.\n\n"
            "commands:\n"
            "  (none)     the built-in default workflow, as mdflow run without a file\n"
            "  run        a workflow file: mdflow run [--resume] [FILE.yaml] (mdflow run --help). Without FILE:\n"
            "             examples/relax_md.yaml, FIRE relaxation then Langevin NVT MD of 256 argon\n"
            "             systems of mixed sizes with inflight batching, then a summary with\n"
            "             StarPU's worker statistics\n"
            "  md         molecular dynamics: mdflow md --input FILE.xyz --ensemble nve|langevin|\n"
            "             nose-hoover|bussi|npt [--steps N --dt FS ...] (mdflow md --help)\n"
            "  relax      geometry optimisation: mdflow relax --input FILE.xyz --optimizer fire|fire2|\n"
            "             lbfgs|gd --fmax F [...] (mdflow relax --help)\n"
            "  methods    the registered integrators and optimisers with their parameters (NAME, default,\n"
            "             range, unit; set with --param NAME=VALUE or a stage's params:)\n"
            "  models     the registered models with their parameters (scalar, per element, per pair)\n"
            "  plot       a PNG of a --log CSV: mdflow plot LOG.csv [-o OUT.png] (mdflow plot --help)\n"
            "  perfmodels the codelets' performance models saved in STARPU_HOME (measurements, mean,\n"
            "             fitted line, calibrated or not)\n"
            "  sched      a workflow under each StarPU scheduling policy: one table (time, rates, worker\n"
            "             shares, transfers, speed-up), JSON and Gantt charts (mdflow sched --help)\n"
            "  version    the version of mdflow, of its plugin API and of StarPU, and CUDA yes/no\n"
            "             (also --version)\n"
            "  help       this text\n\n"
            "methods and models accept --plugin PATH.so (repeatable), as md, relax and run do; every\n"
            "command also loads the plugins MDFLOW_PLUGIN_PATH names (':'-separated .so files or folders).\n");
}

static void md_options_init(md_options *o, command cmd)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    mdf_md_config_init(&o->md);
    o->model = "lj";
    o->md.steps = 100;
    o->md.thermo_every = -1;
    o->temperature = -1.0;
    o->seed = 1;
    o->ncpus = o->ncuda = -1;
    o->optimizer = "fire";
    o->fmax = 0.05;
    o->energy_change = -1.0;
    o->max_steps = 1000;
    o->smax = 0.01;
    o->log_every = cmd == CMD_RELAX ? 1 : 10;
    o->traj.every = cmd == CMD_RELAX ? 1 : 10;
    o->max_force = -1.0;
    o->drift = -1.0;
    o->progress_every = PROGRESS_EVERY_DEFAULT;
}

enum {
    OPT_INPUT = 256, OPT_OUTPUT, OPT_MODEL, OPT_EPS, OPT_SIGMA, OPT_RC, OPT_SPECIES, OPT_PAIR, OPT_SHIFT,
    OPT_INTEGRATOR, OPT_STEPS, OPT_DT, OPT_TEMP, OPT_SEED, OPT_SKIN, OPT_THERMO, OPT_THERMO_SYS,
    OPT_THERMO_FILE, OPT_SHARDS, OPT_CHUNK, OPT_WINDOW, OPT_SCHED, OPT_NCPUS, OPT_NCUDA, OPT_QUIET, OPT_HELP,
    OPT_ENSEMBLE, OPT_KEEPV, OPT_FRICTION, OPT_TAUT, OPT_CHAIN, OPT_PRESSURE, OPT_TAUP, OPT_COMPRESS, OPT_LOG,
    OPT_LOG_EVERY, OPT_NAN, OPT_MAXF, OPT_FREEZE, OPT_WRAP, OPT_DRIFT, OPT_OPTIMIZER, OPT_FMAX, OPT_DE,
    OPT_MAX_STEPS, OPT_PARAM, OPT_PLUGIN, OPT_CELL, OPT_SMAX, OPT_TRAJ, OPT_TRAJ_EVERY,
    OPT_PROGRESS_EVERY, OPT_VDIST, OPT_REBUILD_EVERY, OPT_REBUILD_CHECK
};
/* File formats (tools/formats.h). */
enum { OPT_FORMAT = 1024, OPT_INPUT_FORMAT, OPT_LAMMPS_TYPES };

static const struct option md_long_options[] = {
    {"input", required_argument, 0, OPT_INPUT}, {"output", required_argument, 0, OPT_OUTPUT},
    {"format", required_argument, 0, OPT_FORMAT}, {"input-format", required_argument, 0, OPT_INPUT_FORMAT},
    {"lammps-types", required_argument, 0, OPT_LAMMPS_TYPES},
    {"model", required_argument, 0, OPT_MODEL}, {"lj-epsilon", required_argument, 0, OPT_EPS},
    {"lj-sigma", required_argument, 0, OPT_SIGMA}, {"lj-cutoff", required_argument, 0, OPT_RC},
    {"lj-species", required_argument, 0, OPT_SPECIES}, {"lj-pair", required_argument, 0, OPT_PAIR},
    {"lj-shift", no_argument, 0, OPT_SHIFT}, {"integrator", required_argument, 0, OPT_INTEGRATOR},
    {"steps", required_argument, 0, OPT_STEPS}, {"dt", required_argument, 0, OPT_DT},
    {"temperature", required_argument, 0, OPT_TEMP}, {"seed", required_argument, 0, OPT_SEED},
    {"skin", required_argument, 0, OPT_SKIN}, {"thermo", required_argument, 0, OPT_THERMO},
    {"rebuild-every", required_argument, 0, OPT_REBUILD_EVERY},
    {"rebuild-check", required_argument, 0, OPT_REBUILD_CHECK},
    {"thermo-per-system", no_argument, 0, OPT_THERMO_SYS}, {"thermo-file", required_argument, 0, OPT_THERMO_FILE},
    {"shards", required_argument, 0, OPT_SHARDS}, {"chunk-atoms", required_argument, 0, OPT_CHUNK},
    {"window", required_argument, 0, OPT_WINDOW}, {"sched", required_argument, 0, OPT_SCHED},
    {"ncpus", required_argument, 0, OPT_NCPUS}, {"ncuda", required_argument, 0, OPT_NCUDA},
    {"quiet", no_argument, 0, OPT_QUIET}, {"help", no_argument, 0, OPT_HELP},
    {"ensemble", required_argument, 0, OPT_ENSEMBLE}, {"keep-velocities", no_argument, 0, OPT_KEEPV},
    {"friction", required_argument, 0, OPT_FRICTION}, {"tau-t", required_argument, 0, OPT_TAUT},
    {"chain", required_argument, 0, OPT_CHAIN}, {"pressure", required_argument, 0, OPT_PRESSURE},
    {"tau-p", required_argument, 0, OPT_TAUP}, {"compressibility", required_argument, 0, OPT_COMPRESS},
    {"log", required_argument, 0, OPT_LOG}, {"log-every", required_argument, 0, OPT_LOG_EVERY},
    {"nan-check", no_argument, 0, OPT_NAN}, {"max-force", required_argument, 0, OPT_MAXF},
    {"freeze", no_argument, 0, OPT_FREEZE}, {"wrap", required_argument, 0, OPT_WRAP},
    {"drift-warn", required_argument, 0, OPT_DRIFT}, {"optimizer", required_argument, 0, OPT_OPTIMIZER},
    {"fmax", required_argument, 0, OPT_FMAX}, {"energy-change", required_argument, 0, OPT_DE},
    {"max-steps", required_argument, 0, OPT_MAX_STEPS}, {"param", required_argument, 0, OPT_PARAM},
    {"plugin", required_argument, 0, OPT_PLUGIN}, {"cell", no_argument, 0, OPT_CELL},
    {"smax", required_argument, 0, OPT_SMAX}, {"trajectory", required_argument, 0, OPT_TRAJ},
    {"trajectory-every", required_argument, 0, OPT_TRAJ_EVERY},
    {"progress-every", required_argument, 0, OPT_PROGRESS_EVERY},
    {"velocity-dist", required_argument, 0, OPT_VDIST},
    {0, 0, 0, 0}};

/* Options that belong to one command only. */
static int option_is_md_only(int c)
{
    return c == OPT_INTEGRATOR || c == OPT_STEPS || c == OPT_DT || c == OPT_TEMP || c == OPT_THERMO ||
           c == OPT_THERMO_SYS || c == OPT_THERMO_FILE || c == OPT_ENSEMBLE || c == OPT_KEEPV ||
           c == OPT_FRICTION || c == OPT_TAUT || c == OPT_CHAIN || c == OPT_TAUP ||
           c == OPT_COMPRESS || c == OPT_WRAP || c == OPT_DRIFT || c == OPT_VDIST;
}

static int option_is_relax_only(int c)
{
    return c == OPT_OPTIMIZER || c == OPT_FMAX || c == OPT_DE || c == OPT_MAX_STEPS || c == OPT_CELL ||
           c == OPT_SMAX;
}

/* --ensemble names -> registered methods. */
static const char *ensemble_method(const char *ensemble)
{
    static const char *const map[][2] = {{"nve", "velocity_verlet"}, {"langevin", "langevin"},
                                         {"nose-hoover", "nose_hoover"}, {"nvt", "nose_hoover"},
                                         {"bussi", "bussi"}, {"npt", "npt"}};
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (strcmp(map[k][0], ensemble) == 0) return map[k][1];
    return NULL;
}

static mdf_status int_option(const char *name, const char *text, int *out, mdf_error *err)
{
    int64_t v = 0;
    mdf_status st = cli_int64(name, text, &v, err);
    if (st == MDF_OK) *out = (int)v;
    return st;
}

/* Records an option that sets a parameter (see resolve_settings). */
static mdf_status record(md_options *o, int c, const char *text, mdf_error *err)
{
    if (o->nsettings == CLI_SETTINGS_MAX)
        return mdf_error_set(err, MDF_ERR_INVALID, "more than %d parameter options: merge some", CLI_SETTINGS_MAX);
    o->settings[o->nsettings++] = (cli_setting){c, text};
    return MDF_OK;
}

/* A number option recorded as given, once it reads as a number. */
static mdf_status record_double(md_options *o, int c, const char *opt, mdf_error *err)
{
    double v = 0.0;
    mdf_status st = cli_double(opt, optarg, &v, err);
    return st != MDF_OK ? st : record(o, c, optarg, err);
}

/* One option; returns MDF_OK, an error, or -1 for --help. */
static int apply_option(md_options *o, int c, const char *name, mdf_error *err)
{
    double v = 0.0;
    int64_t i = 0;
    cli_lj_row row;
    switch (c) {
    case OPT_INPUT: o->input = optarg; return MDF_OK;
    case OPT_OUTPUT: o->output = optarg; return MDF_OK;
    case OPT_FORMAT: o->format = optarg; return MDF_OK;
    case OPT_INPUT_FORMAT: o->input_format = optarg; return MDF_OK;
    case OPT_LAMMPS_TYPES: o->lammps_types = optarg; return MDF_OK;
    case OPT_MODEL: o->model = optarg; return MDF_OK;
    case OPT_PARAM: return record(o, c, optarg, err);
    case OPT_PLUGIN:
        if (o->nplugins == CLI_PLUGINS_MAX)
            return mdf_error_set(err, MDF_ERR_INVALID, "more than %d --plugin options", CLI_PLUGINS_MAX);
        o->plugins[o->nplugins++] = optarg;
        return MDF_OK;
    case OPT_EPS: return record_double(o, c, "--lj-epsilon", err);
    case OPT_SIGMA: return record_double(o, c, "--lj-sigma", err);
    case OPT_RC:
        if (cli_double_min("--lj-cutoff", optarg, 0.0, 1, "a cutoff > 0 Å", &v, err) != MDF_OK) return err->code;
        return record(o, c, optarg, err);
    case OPT_SPECIES:
        if (cli_lj_species(optarg, &row, err) != MDF_OK) return err->code;
        return record(o, c, optarg, err);
    case OPT_PAIR:
        if (cli_lj_pair(optarg, &row, err) != MDF_OK) return err->code;
        return record(o, c, optarg, err);
    case OPT_SHIFT: return record(o, c, "true", err);
    case OPT_INTEGRATOR: o->md.integrator = optarg; return MDF_OK;
    case OPT_ENSEMBLE: o->ensemble = optarg; return MDF_OK;
    case OPT_STEPS: return cli_int64("--steps", optarg, &o->md.steps, err);
    case OPT_DT: return cli_double("--dt", optarg, &o->md.dt_fs, err);
    case OPT_TEMP: return cli_double_min("--temperature", optarg, 0.0, 0, "a temperature >= 0 K", &o->temperature, err);
    case OPT_KEEPV: o->keep_velocities = 1; return MDF_OK;
    case OPT_VDIST: o->velocity_dist = optarg; return MDF_OK;
    case OPT_SEED: return cli_int64("--seed", optarg, &o->seed, err);
    case OPT_FRICTION: return record_double(o, c, "--friction", err);
    case OPT_TAUT: return record_double(o, c, "--tau-t", err);
    case OPT_CHAIN:
        if (cli_int64("--chain", optarg, &i, err) != MDF_OK) return err->code;
        return record(o, c, optarg, err);
    case OPT_PRESSURE: o->pressure_given = 1; return record_double(o, c, "--pressure", err);
    case OPT_CELL: o->cell = 1; return MDF_OK;
    case OPT_SMAX: return cli_double("--smax", optarg, &o->smax, err);
    case OPT_TAUP: return record_double(o, c, "--tau-p", err);
    case OPT_COMPRESS: return record_double(o, c, "--compressibility", err);
    case OPT_SKIN: return cli_double("--skin", optarg, &o->md.skin, err);
    case OPT_REBUILD_EVERY:
        if (cli_int64("--rebuild-every", optarg, &i, err) != MDF_OK) return err->code;
        if (i < 1 || i > MDF_REBUILD_EVERY_MAX)
            return mdf_error_set(err, MDF_ERR_INVALID, "--rebuild-every %s: give 1 to %d steps", optarg,
                                 MDF_REBUILD_EVERY_MAX);
        o->md.rebuild_every = (int32_t)i;
        return MDF_OK;
    case OPT_REBUILD_CHECK:
        if (strcmp(optarg, "yes") && strcmp(optarg, "no"))
            return mdf_error_set(err, MDF_ERR_INVALID, "--rebuild-check %s: give yes or no", optarg);
        o->md.rebuild_nocheck = !strcmp(optarg, "no");
        return MDF_OK;
    case OPT_THERMO: return cli_int64("--thermo", optarg, &o->md.thermo_every, err);
    case OPT_THERMO_SYS: o->md.thermo_per_system = 1; return MDF_OK;
    case OPT_THERMO_FILE: o->thermo_file = optarg; return MDF_OK;
    case OPT_SHARDS: return cli_int64("--shards", optarg, &o->shards, err);
    case OPT_CHUNK: return int_option("--chunk-atoms", optarg, &o->md.chunk_atoms, err);
    case OPT_WINDOW: return int_option("--window", optarg, &o->md.window, err);
    case OPT_SCHED: o->sched = optarg; return mdf_runtime_check_sched(optarg, "--sched", err);
    case OPT_NCPUS: return cli_int64_range("--ncpus", optarg, 0, INT_MAX, "a worker count >= 0", &o->ncpus, err);
    case OPT_NCUDA: return cli_int64_range("--ncuda", optarg, 0, INT_MAX, "a worker count >= 0", &o->ncuda, err);
    case OPT_QUIET: o->quiet = 1; return MDF_OK;
    case OPT_PROGRESS_EVERY:
        return cli_double_min("--progress-every", optarg, 0.0, 0, "seconds >= 0 (0: no progress line)",
                              &o->progress_every, err);
    case OPT_LOG: o->log_file = optarg; return MDF_OK;
    case OPT_LOG_EVERY: return cli_int64("--log-every", optarg, &o->log_every, err);
    case OPT_TRAJ: o->traj.path = optarg; return MDF_OK;
    case OPT_TRAJ_EVERY: return cli_int64("--trajectory-every", optarg, &o->traj.every, err);
    case OPT_NAN: o->nan_check = 1; return MDF_OK;
    case OPT_MAXF: return cli_double_min("--max-force", optarg, 0.0, 1, "a force > 0 eV/Å", &o->max_force, err);
    case OPT_FREEZE: o->freeze = 1; return MDF_OK;
    case OPT_WRAP: return cli_int64_range("--wrap", optarg, 0, INT64_MAX, "a step interval >= 0 (0: never)", &o->wrap_every, err);
    case OPT_DRIFT: return cli_double_min("--drift-warn", optarg, 0.0, 1, "an energy > 0 eV/atom", &o->drift, err);
    case OPT_OPTIMIZER: o->optimizer = optarg; return MDF_OK;
    case OPT_FMAX: return cli_double("--fmax", optarg, &o->fmax, err);
    case OPT_DE: return cli_double("--energy-change", optarg, &o->energy_change, err);
    case OPT_MAX_STEPS: return cli_int64("--max-steps", optarg, &o->max_steps, err);
    case OPT_HELP:
        if (o->cmd == CMD_RELAX) usage_relax(stdout);
        else usage_md(stdout);
        return -1;
    default: break;
    }
    const char *cmd = o->cmd == CMD_RELAX ? "relax" : "md";
    return mdf_error_set(err, MDF_ERR_INVALID, "unknown or incomplete option '%s' (see mdflow %s --help)", name, cmd);
}

/* ---- the model, the method and their parameters ---------------------------------------- */

/* Every --plugin, in order, before the model and method are looked up. */
static mdf_status load_plugins(const md_options *o, mdf_error *err)
{
    for (int k = 0; k < o->nplugins; k++)
        if (mdf_plugin_load(o->plugins[k], err) != MDF_OK) return mdf_error_prefix(err, err->code, "--plugin");
    return MDF_OK;
}

/* The integrator (--ensemble, --integrator) or optimiser (--optimizer). */
static mdf_status resolve_method(md_options *o, mdf_error *err)
{
    char names[600];
    if (o->cmd == CMD_RELAX) {
        const mdf_method *m = mdf_method_find(o->optimizer);
        if (m && o->cell && !(m->flags & MDF_METHOD_CELL)) {
            const char *cell_name = strcmp(m->name, "fire") == 0 ? "fire_cell"
                                    : strcmp(m->name, "lbfgs") == 0 ? "lbfgs_cell" : NULL;
            if (!cell_name)
                return mdf_error_set(err, MDF_ERR_INVALID, "--cell works with --optimizer fire or lbfgs (the "
                                     "variable-cell fire_cell, lbfgs_cell), not '%s'", o->optimizer);
            m = mdf_method_find(cell_name);
        }
        if (!m || !(m->flags & MDF_METHOD_OPTIMISER)) {
            runner_method_names(1, names, sizeof names);
            return mdf_error_set(err, MDF_ERR_INVALID, "--optimizer '%s' is not one of %s (mdflow methods; a plugin "
                                 "adds more: --plugin PATH.so)", o->optimizer, names);
        }
        o->method = m;
        o->optimizer = m->name;
        if (m->flags & MDF_METHOD_CELL) o->cell = 1; /* --optimizer fire_cell: --cell implied */
        return MDF_OK;
    }
    if (o->ensemble) {
        const char *method = ensemble_method(o->ensemble);
        if (!method)
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "--ensemble '%s' is not one of nve, langevin, nose-hoover, bussi, npt", o->ensemble);
        o->md.integrator = method;
    }
    const mdf_method *m = mdf_method_find(o->md.integrator);
    if (!m) {
        runner_method_names(0, names, sizeof names);
        return mdf_error_set(err, MDF_ERR_INVALID, "--integrator '%s' is not a registered method: use one of %s "
                             "(mdflow methods; a plugin adds more: --plugin PATH.so)", o->md.integrator, names);
    }
    if (m->flags & MDF_METHOD_OPTIMISER)
        return mdf_error_set(err, MDF_ERR_INVALID, "'%s' is an optimiser: use mdflow relax --optimizer %s",
                             o->md.integrator, o->md.integrator);
    o->method = m;
    o->md.integrator = m->name;
    return MDF_OK;
}

/* A method parameter, checked against the method's table now (the name,
 * the value's range), then kept by name for the stage. */
static mdf_status set_method_param(md_options *o, const char *name, const char *value, const char *what,
                                   mdf_error *err)
{
    const mdf_method *m = o->method;
    char owner[96];
    snprintf(owner, sizeof owner, "method %s", m->name);
    mdf_status st = mdf_params_check_setting(m->params, owner, name, value, err);
    if (st == MDF_OK) st = mdf_param_list_set(&o->md.method_params, name, value, err);
    return st != MDF_OK ? mdf_error_prefix(err, st, "%s", what) : MDF_OK;
}

static void table_names(const mdf_param_def *defs, char *buf, size_t size)
{
    size_t used = 0;
    if (size) buf[0] = '\0';
    for (size_t k = 0; defs && defs[k].name && used + 1 < size; k++) {
        int w = snprintf(buf + used, size - used, "%s%s", k ? ", " : "", defs[k].name);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used == 0) snprintf(buf, size, "none");
}

/* --param NAME=VALUE: NAME among the model's scalar parameters or the
 * method's; model.NAME or method.NAME says which when both take it. */
static mdf_status apply_param(md_options *o, const char *text, mdf_error *err)
{
    const char *eq = strchr(text, '=');
    char what[160], name[MDF_PARAM_NAME_MAX + 8];
    snprintf(what, sizeof what, "--param %s", text);
    if (!eq || eq == text || !eq[1])
        return mdf_error_set(err, MDF_ERR_INVALID, "--param '%s': write NAME=VALUE, e.g. --param friction_per_fs=0.02 "
                             "(mdflow methods and mdflow models list the names)", text);
    if ((size_t)(eq - text) >= sizeof name)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: the name is longer than %d characters", what,
                             MDF_PARAM_NAME_MAX - 1);
    snprintf(name, sizeof name, "%.*s", (int)(eq - text), text);
    const char *value = eq + 1, *bare = name;
    const mdf_param_def *model_defs = runner_model_params(&o->model_cfg), *method_defs = o->method->params;
    int to_model = -1; /* 1 model, 0 method, -1 by the name */
    if (!strncmp(name, "model.", 6)) to_model = 1, bare = name + 6;
    else if (!strncmp(name, "method.", 7)) to_model = 0, bare = name + 7;
    int in_model = mdf_params_find(model_defs, bare) != NULL, in_method = mdf_params_find(method_defs, bare) != NULL;
    if (to_model < 0 && in_model && in_method)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: both model %s and method %s take a parameter '%s': write "
                             "--param model.%s=%s or --param method.%s=%s", what, o->model_cfg.name, o->method->name,
                             bare, bare, value, bare, value);
    if (to_model < 0 && !in_model && !in_method) {
        char mn[600], tn[600];
        table_names(model_defs, mn, sizeof mn);
        table_names(method_defs, tn, sizeof tn);
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: unknown parameter '%s': model %s takes %s; method %s takes %s "
                             "(mdflow models, mdflow methods)", what, bare, o->model_cfg.name, mn, o->method->name, tn);
    }
    if (to_model < 0) to_model = in_model;
    if (!to_model) return set_method_param(o, bare, value, what, err);
    mdf_status st = runner_model_add(&o->model_cfg, RUNNER_SCALAR, 0, 0, bare, value, err);
    return st != MDF_OK ? mdf_error_prefix(err, st, "%s", what) : MDF_OK;
}

/* The method options that are shorthands: the first of `names` the chosen
 * method takes. */
static const struct {
    int opt;
    const char *flag;
    const char *names[2];
} method_shorthands[] = {
    {OPT_FRICTION, "--friction", {"friction_per_fs", NULL}},
    {OPT_TAUT, "--tau-t", {"tau_t_fs", "tau_fs"}},
    {OPT_CHAIN, "--chain", {"chain", NULL}},
    {OPT_PRESSURE, "--pressure", {"pressure_bar", "pressure_GPa"}}, /* md: bar; relax --cell: GPa */
    {OPT_TAUP, "--tau-p", {"tau_p_fs", NULL}},
    {OPT_COMPRESS, "--compressibility", {"compressibility_per_bar", NULL}},
};

static mdf_status apply_method_shorthand(md_options *o, size_t k, const char *value, mdf_error *err)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s", method_shorthands[k].flag, value);
    for (int j = 0; j < 2 && method_shorthands[k].names[j]; j++)
        if (mdf_params_find(o->method->params, method_shorthands[k].names[j]))
            return set_method_param(o, method_shorthands[k].names[j], value, what, err);
    char tn[600];
    table_names(o->method->params, tn, sizeof tn);
    return mdf_error_set(err, MDF_ERR_INVALID, "%s sets %s, which method %s does not take: its parameters are %s "
                         "(mdflow methods)", what, method_shorthands[k].names[0], o->method->name, tn);
}

/* The --lj-* options: the lj model's scalar parameters and rows. */
static mdf_status apply_lj_shorthand(md_options *o, const cli_setting *s, mdf_error *err)
{
    static const struct {
        int opt;
        const char *flag, *name;
    } scalar[] = {{OPT_EPS, "--lj-epsilon", "epsilon"}, {OPT_SIGMA, "--lj-sigma", "sigma"},
                  {OPT_RC, "--lj-cutoff", "cutoff"}, {OPT_SHIFT, "--lj-shift", "shift"}};
    static const char *const row_names[] = {"epsilon", "sigma", "cutoff"};
    const char *flag = s->opt == OPT_SPECIES ? "--lj-species" : s->opt == OPT_PAIR ? "--lj-pair" : NULL;
    for (size_t k = 0; !flag && k < sizeof scalar / sizeof scalar[0]; k++)
        if (scalar[k].opt == s->opt) flag = scalar[k].flag;
    if (strcmp(o->model_cfg.name, "lj") != 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s is for --model lj; model %s takes --param NAME=VALUE (mdflow "
                             "models lists its parameters)", flag, o->model_cfg.name);
    mdf_status st = MDF_OK;
    for (size_t k = 0; k < sizeof scalar / sizeof scalar[0]; k++)
        if (scalar[k].opt == s->opt) st = runner_model_add(&o->model_cfg, RUNNER_SCALAR, 0, 0, scalar[k].name, s->text, err);
    cli_lj_row row;
    if (s->opt == OPT_SPECIES && (st = cli_lj_species(s->text, &row, err)) == MDF_OK) {
        if (runner_model_has_species(&o->model_cfg, row.z[0]))
            return mdf_error_set(err, MDF_ERR_INVALID, "--lj-species %s: %s is given twice: give each element once",
                                 s->text, mdf_element_symbol(row.z[0]));
        for (int k = 0; st == MDF_OK && k < 3; k++)
            st = runner_model_add(&o->model_cfg, RUNNER_SPECIES, row.z[0], 0, row_names[k], row.value[k], err);
    }
    if (s->opt == OPT_PAIR && (st = cli_lj_pair(s->text, &row, err)) == MDF_OK) {
        for (int t = 0; t < 2; t++)
            if (!runner_model_has_species(&o->model_cfg, row.z[t]))
                return mdf_error_set(err, MDF_ERR_INVALID, "--lj-pair %s: %s has no --lj-species: give both "
                                     "elements' parameters (--lj-species) before their pair", s->text,
                                     mdf_element_symbol(row.z[t]));
        for (int k = 0; st == MDF_OK && k < 3; k++)
            st = runner_model_add(&o->model_cfg, RUNNER_PAIR, row.z[0], row.z[1], row_names[k], row.value[k], err);
    }
    return st != MDF_OK ? mdf_error_prefix(err, st, "%s %s", flag, s->text) : MDF_OK;
}

/* After the options: plugins, then the model and the method, then every
 * parameter option in command-line order (a later one wins). */
static mdf_status resolve_settings(md_options *o, mdf_error *err)
{
    mdf_status st = load_plugins(o, err);
    /* --model NAME:FILE is --model NAME --param file=FILE (eam:Cu_u3.eam), or
     * --param name=VALUE for a model without a file but with a name (kim:NAME);
     * NAME/STYLE is --model NAME --param style=STYLE (eam/alloy, eam/fs: the
     * flavours of LAMMPS's pair styles; plain eam takes it from the file's
     * name). */
    char name[RUNNER_NAME_MAX];
    const char *colon = strchr(o->model, ':');
    size_t len = colon ? (size_t)(colon - o->model) : strlen(o->model);
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, o->model, len);
    name[len] = '\0';
    char *slash = strchr(name, '/');
    const char *flavour = NULL;
    if (slash) {
        *slash = '\0';
        flavour = slash + 1;
    }
    if (st == MDF_OK && runner_model_init(&o->model_cfg, name, err) != MDF_OK)
        st = mdf_error_prefix(err, err->code, "--model %s", o->model);
    if (st == MDF_OK && flavour) {
        const mdf_param_def *t = runner_model_params(&o->model_cfg);
        if (!t || !mdf_params_find(t, "style") || !*flavour)
            st = mdf_error_set(err, MDF_ERR_INVALID,
                               "--model %s: model %s has no style to choose (NAME/STYLE is for models with a style "
                               "parameter: eam/alloy, eam/fs)",
                               o->model, name);
        else if (runner_model_add(&o->model_cfg, RUNNER_SCALAR, 0, 0, "style", flavour, err) != MDF_OK)
            st = mdf_error_prefix(err, err->code, "--model %s", o->model);
    }
    if (st == MDF_OK && colon) {
        const mdf_param_def *t = runner_model_params(&o->model_cfg);
        const char *param = t && mdf_params_find(t, "file") ? "file" : t && mdf_params_find(t, "name") ? "name" : NULL;
        if (!param)
            st = mdf_error_set(err, MDF_ERR_INVALID, "--model %s: model %s takes no file (NAME:FILE is for models "
                               "with a file parameter, as eam, and NAME:NAME for models with a name, as kim)",
                               o->model, name);
        else if (runner_model_add(&o->model_cfg, RUNNER_SCALAR, 0, 0, param, colon + 1, err) != MDF_OK)
            st = mdf_error_prefix(err, err->code, "--model %s", o->model);
    }
    if (st == MDF_OK) st = resolve_method(o, err);
    for (int k = 0; st == MDF_OK && k < o->nsettings; k++) {
        const cli_setting *s = &o->settings[k];
        size_t j = 0;
        while (j < sizeof method_shorthands / sizeof method_shorthands[0] && method_shorthands[j].opt != s->opt) j++;
        if (s->opt == OPT_PARAM) st = apply_param(o, s->text, err);
        else if (j < sizeof method_shorthands / sizeof method_shorthands[0])
            st = apply_method_shorthand(o, j, s->text, err);
        else st = apply_lj_shorthand(o, s, err);
    }
    return st;
}

static mdf_status check_md_options(md_options *o, mdf_error *err)
{
    /* A method that reads the target temperature (a thermostat) needs one. */
    int thermostat = (o->method->flags & (MDF_METHOD_TEMPERATURE | MDF_METHOD_POSITIVE_TEMPERATURE)) != 0;
    if (thermostat && o->temperature < 0.0)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s needs a target temperature: add --temperature K",
                             o->md.integrator);
    if (o->temperature >= 0.0) o->md.params.temperature_K = o->temperature;
    o->md.params.seed = (uint64_t)o->seed;
    if (o->velocity_dist && strcmp(o->velocity_dist, "gaussian") != 0 && strcmp(o->velocity_dist, "uniform") != 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "--velocity-dist %s: use gaussian or uniform", o->velocity_dist);
    if (o->velocity_dist && (o->temperature < 0.0 || o->keep_velocities))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "--velocity-dist %s shapes the velocities drawn at --temperature K: add --temperature "
                             "(and leave out --keep-velocities)", o->velocity_dist);
    return MDF_OK;
}

static mdf_status check_relax_options(md_options *o, mdf_error *err)
{
    if (!(o->fmax >= 0.0)) return mdf_error_set(err, MDF_ERR_INVALID, "--fmax must be >= 0 eV/Å");
    if (o->max_steps < 0) return mdf_error_set(err, MDF_ERR_INVALID, "--max-steps must be >= 0");
    if (!(o->smax >= 0.0) || !isfinite(o->smax))
        return mdf_error_set(err, MDF_ERR_INVALID, "--smax must be finite and >= 0 GPa (got %g)", o->smax);
    return MDF_OK;
}

/* The formats of --input and --output: by their names, or as --input-format
 * and --format say (tools/formats.h). */
static mdf_status resolve_formats(md_options *o, mdf_error *err)
{
    if (o->format && !o->output)
        return mdf_error_set(err, MDF_ERR_INVALID, "--format %s names the format of --output: add --output FILE", o->format);
    mdf_status st = fmt_choose("--input", o->input, o->input_format, "--input-format", &o->in_fmt, err);
    if (st == MDF_OK) st = fmt_check_input("--input", o->input, o->in_fmt, err);
    if (st == MDF_OK && o->output) st = fmt_choose("--output", o->output, o->format, "--format", &o->out_fmt, err);
    if (st == MDF_OK && o->lammps_types)
        st = fmt_parse_types(o->lammps_types, o->type_z, FMT_TYPES_MAX, &o->ntype_z, err);
    return st;
}

/* Returns MDF_OK, an error, or -1 when --help was printed. */
static int parse_options(int argc, char **argv, md_options *o, mdf_error *err)
{
    int c;
    mdf_status st = MDF_OK;
    optind = 1;
    opterr = 0;
    const char *cmd = o->cmd == CMD_RELAX ? "relax" : "md";
    int longindex = -1;
    while (st == MDF_OK && (c = getopt_long(argc, argv, "", md_long_options, &longindex)) != -1) {
        const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        if ((o->cmd == CMD_RELAX && option_is_md_only(c)) || (o->cmd == CMD_MD && option_is_relax_only(c)))
            return mdf_error_set(err, MDF_ERR_INVALID, "option '--%s' belongs to mdflow %s, not mdflow %s",
                                 longindex >= 0 ? md_long_options[longindex].name : name,
                                 o->cmd == CMD_RELAX ? "md" : "relax", cmd);
        longindex = -1;
        int r = apply_option(o, c, name, err);
        if (r == -1) return -1;
        st = (mdf_status)r;
    }
    if (st == MDF_OK && optind < argc)
        st = mdf_error_set(err, MDF_ERR_INVALID, "unexpected argument '%s' (see mdflow %s --help)", argv[optind], cmd);
    if (st == MDF_OK && !o->input)
        st = mdf_error_set(err, MDF_ERR_INVALID, "--input is required (see mdflow %s --help)", cmd);
    if (st == MDF_OK && o->shards < 0) st = mdf_error_set(err, MDF_ERR_INVALID, "--shards must be >= 0");
    if (st == MDF_OK && o->log_every < 1) st = mdf_error_set(err, MDF_ERR_INVALID, "--log-every must be >= 1");
    if (st == MDF_OK) st = trajectory_check(o->traj.path, o->traj.every, err);
    const mdf_method *named = o->cmd == CMD_RELAX ? mdf_method_find(o->optimizer) : NULL;
    if (named && (named->flags & MDF_METHOD_CELL)) o->cell = 1; /* --optimizer fire_cell: --cell implied */
    if (st == MDF_OK && o->cmd == CMD_RELAX && o->pressure_given && !o->cell)
        st = mdf_error_set(err, MDF_ERR_INVALID, "--pressure is the target pressure of a variable-cell relaxation: "
                           "add --cell (a fixed-cell relaxation has no pressure to aim at)");
    if (st == MDF_OK) st = resolve_settings(o, err);
    if (st == MDF_OK) st = o->cmd == CMD_RELAX ? check_relax_options(o, err) : check_md_options(o, err);
    if (st == MDF_OK) st = resolve_formats(o, err);
    return st;
}

static void print_summary(const mdf_batch *b, const mdf_stage_report *r)
{
    printf("\nmdflow summary\n");
    printf("  systems %zu, atoms %lld, shards %d, model chunks %d\n", mdf_batch_nsystems(b),
           (long long)mdf_batch_natoms(b), r->nshards, r->nchunks);
    printf("  %lld steps in %.3f s: %.4g atom-steps/s\n", (long long)r->steps, r->wall_seconds,
           r->atom_steps_per_second);
    printf("  model evaluations %lld, neighbour-list rebuilds %lld (summed over systems)\n",
           (long long)r->model_evaluations, (long long)r->list_rebuilds);
    printf("  largest neighbour count %d of %d slots, atoms beyond the slots %lld\n", r->max_neighbours,
           r->list_slots, (long long)r->overflowed_atoms);
    mdf_runtime_print_worker_stats(stdout);
}

/* Which systems a relaxation left unconverged (the first few, by id). */
static void print_relax_result(const mdf_batch *b, const md_options *o, const mdf_stage_report *r)
{
    size_t n = mdf_batch_nsystems(b);
    char cell[96] = "";
    if (o->cell) snprintf(cell, sizeof cell, ", stress within %g GPa of the target", o->smax);
    printf("\nrelaxed %lld of %zu systems (fmax <= %g eV/Å%s%s) in at most %lld steps\n", (long long)r->converged, n,
           o->fmax, o->energy_change >= 0.0 ? ", energy change within --energy-change" : "", cell, (long long)r->steps);
    if (r->remaining == 0) return;
    printf("not converged after %lld steps (status 0 in the output):", (long long)o->max_steps);
    int shown = 0;
    for (size_t i = 0; i < n && shown < 20; i++) {
        mdf_system_view v;
        if (mdf_batch_get_system(b, i, &v, NULL) != MDF_OK || v.status != 0) continue;
        printf(" %lld (fmax %.3g)", (long long)v.id, v.fmax);
        shown++;
    }
    printf("%s\n", r->remaining > shown ? " ..." : "");
}

/* After a run: systems that ended with NaN/Inf (no NaN check stopped them)
 * make it fail, naming them, instead of exiting 0 with NaN everywhere. */
static mdf_status check_finite(const mdf_batch *b, command cmd, mdf_error *err)
{
    runner_nonfinite n;
    memset(&n, 0, sizeof n);
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < mdf_batch_nsystems(b); i++) {
        mdf_system_view v;
        mdf_frame f;
        st = mdf_batch_get_system(b, i, &v, err);
        if (st == MDF_OK) st = mdf_batch_get_frame(b, i, &f, err);
        if (st != MDF_OK) break;
        runner_nonfinite_check(&n, &f, v.id, v.status);
        mdf_frame_free(&f);
    }
    if (st != MDF_OK) return st;
    return runner_nonfinite_error(&n, cmd == CMD_RELAX ? "clamp the forces (--max-force), or add --nan-check to stop at the first NaN, naming the step"
                                                      : "try a smaller --dt or a force clamp (--max-force), or add --nan-check to stop at the first NaN, naming the step",
                                  err);
}

static mdf_status write_output(const char *path, fmt_kind kind, mdf_batch *b, mdf_error *err)
{
    size_t n = mdf_batch_nsystems(b);
    mdf_frame *frames = calloc(n, sizeof *frames);
    if (!frames) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to write %zu structures", n);
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < n; i++) st = mdf_batch_get_frame(b, i, &frames[i], err);
    if (st == MDF_OK) {
        mdf_runtime_pause(); /* host work only: the idle workers sleep meanwhile */
        st = fmt_write(path, kind, frames, n, 0, err);
        mdf_runtime_resume();
    }
    for (size_t i = 0; i < n; i++) mdf_frame_free(&frames[i]);
    free(frames);
    return st;
}

/* The thermo log goes to PATH.tmp and replaces PATH once the run has
 * started writing it, so a run refused at validation leaves an existing
 * log untouched. */
typedef struct thermo_file {
    const char *path;
    char tmp[4096];
    FILE *fp;
} thermo_file;

static mdf_status thermo_open(thermo_file *t, const char *path, int quiet, mdf_error *err)
{
    memset(t, 0, sizeof *t);
    if (!path) {
        t->fp = quiet ? NULL : stdout;
        return MDF_OK;
    }
    t->path = path;
    snprintf(t->tmp, sizeof t->tmp, "%s.tmp", path);
    t->fp = fopen(t->tmp, "w");
    if (!t->fp)
        return mdf_error_set(err, MDF_ERR_IO, "cannot write the thermo log through '%s': check that the directory "
                             "exists and is writable", t->tmp);
    return MDF_OK;
}

/* Puts PATH.tmp in place, unless a write failed: a truncated log never
 * replaces the previous one (before, a full disk did exactly that). */
static mdf_status thermo_close(thermo_file *t, const char *cause, mdf_error *err)
{
    if (!t->path || !t->fp) return MDF_OK;
    long written = ftell(t->fp);
    int bad = ferror(t->fp) != 0;
    errno = 0;
    if (fclose(t->fp) != 0) bad = 1;
    int e = errno ? errno : EIO;
    t->fp = NULL;
    if (bad)
        return mdf_error_set(err, MDF_ERR_IO, "writing the thermo log '%s' failed (%s); '%s' is unchanged and the "
                             "rows written so far are in '%s': free disk space or give --thermo-file another path",
                             t->path, cause ? cause : strerror(e), t->path, t->tmp);
    if (written <= 0) {
        remove(t->tmp);
        return MDF_OK;
    }
    if (rename(t->tmp, t->path) != 0)
        return mdf_error_set(err, MDF_ERR_IO, "cannot move the thermo log '%s' to '%s': %s (the rows are in '%s')",
                             t->tmp, t->path, strerror(errno), t->tmp);
    return MDF_OK;
}

/* The hooks md and relax options ask for. */
static void hooks_from_options(const md_options *o, FILE *thermo, int freeze, runner_hooks *h)
{
    runner_hooks_init(h);
    h->freeze = freeze;
    h->max_force = o->max_force;
    h->nan_check = o->nan_check;
    h->wrap_every = o->wrap_every;
    h->drift = o->drift;
    h->thermo = thermo;
    h->thermo_every = o->md.thermo_every;
    h->thermo_per_system = o->md.thermo_per_system;
    h->dt_fs = o->md.dt_fs;
    h->log_file = o->log_file;
    h->log_every = o->log_every;
}

static mdf_status build_stage(const md_options *o, FILE *thermo, int freeze, mdf_stage **out, mdf_error *err)
{
    mdf_stage_config sc;
    mdf_stage_config_init(&sc);
    sc.params = o->md.params;
    sc.method_params = o->md.method_params;
    sc.window = o->md.window;
    sc.skin = o->md.skin;
    sc.rebuild_every = o->md.rebuild_every;
    sc.rebuild_nocheck = o->md.rebuild_nocheck;
    sc.chunk_atoms = o->md.chunk_atoms;
    if (o->cmd == CMD_RELAX) {
        sc.integrator = o->optimizer;
        sc.max_steps = o->max_steps;
    } else {
        sc.integrator = o->md.integrator;
        sc.params.dt_fs = o->md.dt_fs;
        sc.max_steps = o->md.steps;
    }
    mdf_status st = mdf_stage_create(&sc, out, err);
    if (st == MDF_OK && o->cmd == CMD_RELAX) {
        st = mdf_stage_add_criterion(*out, MDF_CRITERION_FMAX, o->fmax, err);
        if (st == MDF_OK && o->energy_change >= 0.0)
            st = mdf_stage_add_criterion(*out, MDF_CRITERION_ENERGY_CHANGE, o->energy_change, err);
        if (st == MDF_OK && o->cell) st = mdf_stage_add_criterion(*out, MDF_CRITERION_SMAX, o->smax, err);
    }
    runner_hooks hooks;
    hooks_from_options(o, thermo, freeze, &hooks);
    if (st == MDF_OK) st = runner_add_hooks(*out, 0, &hooks, err);
    if (st == MDF_OK && o->traj.sink) /* relax: the step each system converged at too */
        st = trajectory_add_hooks(*out, o->traj.sink, o->traj.every, o->cmd == CMD_RELAX, err);
    if (st != MDF_OK) {
        mdf_stage_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* The command's files, before anything runs: outputs distinct from the
 * input and from each other, and writable. */
static mdf_status check_files(const md_options *o, mdf_error *err)
{
    const path_role roles[] = {{"--input", o->input, 0, 0},
                               {"--output", o->output, 1, 0},
                               {"--log", o->log_file, 1, 0},
                               {"--thermo-file", o->cmd == CMD_MD ? o->thermo_file : NULL, 1, 0},
                               {"--trajectory", o->traj.path, 1, 0}};
    size_t n = sizeof roles / sizeof roles[0];
    mdf_status st = paths_check_distinct(NULL, roles, n, err);
    if (st == MDF_OK) st = paths_check_writable(NULL, roles, n, err);
    return st;
}

/* Elements of the input the model has no parameters for are refused
 * (runner_check_model_elements: argon's defaults are argon's only). */
static mdf_status check_model_elements(const md_options *o, const mdf_frame_list *frames, mdf_error *err)
{
    char where[4200];
    snprintf(where, sizeof where, "--input %s", o->input);
    return runner_check_model_elements(&o->model_cfg, frames, where,
                                       "--lj-species SYM:EPSILON:SIGMA:CUTOFF for each element, --lj-epsilon E "
                                       "--lj-sigma S for every element, or another model: --model eam:FILE, "
                                       "--model kim:NAME",
                                       err);
}

static mdf_status run_command(md_options *o, mdf_error *err)
{
    mdf_frame_list frames;
    mdf_frame_list_init(&frames);
    mdf_status st = check_files(o, err);
    if (st == MDF_OK) st = fmt_read("--input", o->input, o->in_fmt, o->type_z, o->ntype_z, &frames, err);
    if (st == MDF_OK && frames.count == 0)
        st = mdf_error_set(err, MDF_ERR_INVALID, "%s holds no structure", o->input);
    if (st == MDF_OK && o->output) st = fmt_check_count("--output", o->output, o->out_fmt, frames.count, err);
    if (st == MDF_OK) st = check_model_elements(o, &frames, err);
    if (st == MDF_OK) runner_warn_mixed_cutoffs(&o->model_cfg, "--lj-pair A:B:EPSILON:SIGMA:RC");
    if (st == MDF_OK && o->cmd == CMD_MD) {
        char where[160];
        snprintf(where, sizeof where, "%s %s", o->ensemble ? "--ensemble" : "--integrator",
                 o->ensemble ? o->ensemble : o->md.integrator);
        runner_warn_npt_open(o->md.integrator, where, &frames);
    }
    if (o->md.thermo_every < 0) o->md.thermo_every = o->md.steps >= 10 ? o->md.steps / 10 : 1;
    thermo_file thermo = {0};
    if (st == MDF_OK && o->cmd == CMD_MD) st = thermo_open(&thermo, o->thermo_file, o->quiet, err);
    mdf_runtime_config rc;
    mdf_runtime_config_init(&rc);
    rc.sched = o->sched;
    rc.ncpus = (int)o->ncpus;
    rc.ncuda = (int)o->ncuda;
    int started = 0;
    if (st == MDF_OK) st = mdf_runtime_start(&rc, err);
    started = st == MDF_OK;
    mdf_model *model = NULL;
    mdf_batch *batch = NULL;
    mdf_stage *stage = NULL;
    if (st == MDF_OK) st = runner_model_create(&o->model_cfg, &model, err);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = (int)o->shards;
    if (st == MDF_OK) {
        /* Host work only (checks, spatial order, copies: a second for a
         * million atoms): the idle workers sleep instead of spinning on
         * the cores the host needs. */
        mdf_runtime_pause();
        st = mdf_batch_create(frames.frames, frames.count, &bc, &batch, err);
        mdf_runtime_resume();
    }
    if (st == MDF_OK && o->cmd == CMD_MD && o->temperature >= 0.0 && !o->keep_velocities)
        st = mdf_batch_thermalize_dist(batch, o->temperature, (uint64_t)o->seed, 0,
                                       o->velocity_dist && !strcmp(o->velocity_dist, "uniform")
                                           ? MDF_VELOCITY_UNIFORM
                                           : MDF_VELOCITY_GAUSSIAN,
                                       err);
    int freeze = o->freeze || runner_frames_have_frozen(&frames);
    /* The batch holds its own copy: the input frames (28 MB at 1,000,188
     * atoms) go back before the run instead of adding to its peak. */
    mdf_frame_list_free(&frames);
    if (st == MDF_OK)
        st = trajectory_open(&o->traj, batch, o->cmd == CMD_RELAX ? o->max_steps : o->md.steps, err);
    if (st == MDF_OK) st = build_stage(o, thermo.fp, freeze, &stage, err);
    progress_line progress;
    if (st == MDF_OK) progress_attach(&progress, stage, o->quiet, o->progress_every, o->cmd == CMD_RELAX);
    mdf_stage_report report;
    memset(&report, 0, sizeof report);
    if (st == MDF_OK) st = mdf_stage_run(stage, batch, model, &report, err);
    if (st == MDF_OK)
        st = trajectory_finish(&o->traj, batch, o->cmd == CMD_RELAX ? o->md.params.dt_fs : o->md.dt_fs, err);
    /* Write what there is also after a run stopped by a hook: it says where. */
    if (batch && o->output && (st == MDF_OK || err->code == MDF_ERR_PHYSICS)) {
        mdf_error werr;
        mdf_error_clear(&werr);
        if (write_output(o->output, o->out_fmt, batch, &werr) != MDF_OK && st == MDF_OK) {
            st = werr.code;
            *err = werr;
        }
    }
    if (st == MDF_OK) st = check_finite(batch, o->cmd, err);
    if (st == MDF_OK && o->cmd == CMD_RELAX) print_relax_result(batch, o, &report);
    if (st == MDF_OK) print_summary(batch, &report);
    mdf_stage_destroy(stage);
    st = trajectory_close(&o->traj, st, err);
    mdf_batch_destroy(batch);
    mdf_model_destroy(model);
    if (started) mdf_runtime_stop();
    /* A failed thermo write stopped the run with the hook's words; this
     * names the file. */
    mdf_error terr;
    mdf_error_clear(&terr);
    int thermo_failed = st != MDF_OK && err->code == MDF_ERR_IO && strstr(err->message, "thermo rows");
    if (thermo_close(&thermo, thermo_failed ? err->message : NULL, &terr) != MDF_OK &&
        (st == MDF_OK || thermo_failed)) {
        st = terr.code;
        *err = terr;
    }
    mdf_frame_list_free(&frames);
    return st;
}

/* " [plugin FILE]" for a plugin's entry, "" for a built-in. */
static const char *origin_note(const void *def, char *buf, size_t size)
{
    const char *file = runner_plugin_of(def);
    if (!file) return "";
    snprintf(buf, size, " [plugin %s]", file);
    return buf;
}

static void print_methods(void)
{
    printf("integrators and optimisers (mdflow md --integrator NAME, mdflow relax --optimizer NAME), each with\n"
           "its parameters (set with --param NAME=VALUE, or a workflow stage's params: {NAME: VALUE}):\n");
    for (size_t k = 0; k < mdf_method_count(); k++) {
        const mdf_method *m = mdf_method_at(k);
        char note[4200];
        printf("  %-16s %s%s%s\n", m->name, m->summary ? m->summary : "",
               (m->flags & MDF_METHOD_OPTIMISER) ? " [optimiser]" : "", origin_note(m, note, sizeof note));
        if (mdf_params_count(m->params) == 0) printf("      (no parameters)\n");
        mdf_params_print(stdout, m->params, "      ");
    }
}

static void print_table(const char *title, const mdf_param_def *defs)
{
    if (mdf_params_count(defs) == 0) return;
    printf("    %s\n", title);
    mdf_params_print(stdout, defs, "      ");
}

static void print_models(void)
{
    printf("models (mdflow md/relax --model NAME --param NAME=VALUE; a workflow's model: {type: NAME,\n"
           "params: {NAME: VALUE}, species: [{element: X, NAME: VALUE}], pairs: [{elements: [X, Y], NAME: VALUE}]}):\n");
    for (size_t k = 0; k < mdf_model_def_count(); k++) {
        const mdf_model_def *d = mdf_model_def_at(k);
        char note[4200];
        printf("  %-16s %s%s\n", d->name, d->summary ? d->summary : "", origin_note(d, note, sizeof note));
        print_table("parameters:", d->params);
        print_table("per element (species:; unset values from the parameters above):", d->species_params);
        print_table("per pair (pairs:):", d->pair_params);
#ifdef MDF_HAVE_KIM
        if (!strcmp(d->name, "kim")) {
            char **names;
            int n = mdf_kim_model_names(&names);
            printf("    --model kim:NAME (a workflow's model: {type: kim, name: NAME}): %d KIM portable models are "
                   "installed%s\n", n > 0 ? n : 0, n > 0 ? " (mdflow models --kim lists them)" : " (install openkim-models)");
            if (n > 0) mdf_kim_names_free(names, n);
        }
#endif
    }
#ifndef MDF_HAVE_KIM
    printf("  (kim: OpenKIM models through the KIM API; this mdflow was built without it: install libkim-api-dev and\n"
           "   openkim-models, then configure and build again)\n");
#endif
}

/* Under an MPI launcher: this process's rank, which prefixes every error
 * ("mdflow: rank R: ..."), since every rank prints its own; -1 otherwise. */
static int launcher_rank = -1;

static int fail(const mdf_error *err)
{
    if (launcher_rank >= 0)
        fprintf(stderr, "mdflow: rank %d: %s: %s\n", launcher_rank, mdf_status_name(err->code), err->message);
    else fprintf(stderr, "mdflow: %s: %s\n", mdf_status_name(err->code), err->message);
    /* 2: the input or the command line must change; 1: anything else. */
    int bad_input = err->code == MDF_ERR_INVALID || err->code == MDF_ERR_PARSE || err->code == MDF_ERR_PHYSICS;
    return bad_input ? 2 : 1;
}

/* mdflow models --kim: the installed KIM portable models, one a line. */
static int print_kim_models(void)
{
#ifdef MDF_HAVE_KIM
    char **names;
    int n = mdf_kim_model_names(&names);
    for (int k = 0; k < n; k++) printf("kim:%s\n", names[k]);
    if (n > 0) mdf_kim_names_free(names, n);
    if (n <= 0) fprintf(stderr, "mdflow: no KIM portable model is installed (install openkim-models)\n");
    return n > 0 ? 0 : 1;
#else
    mdf_error err;
    mdf_error_clear(&err);
    mdf_error_set(&err, MDF_ERR_INVALID, "this mdflow was built without KIM support: install libkim-api-dev and "
                  "openkim-models (scripts/install-deps.sh), then configure and build again");
    return fail(&err);
#endif
}

static void usage_run(FILE *fp)
{
    fprintf(fp,
            "usage: mdflow run [--check] [--resume | --sequential] [--quiet] [--progress-every S]\n"
            "                  [--plugin PATH.so] [--pipe-report FILE.json] [FILE.yaml]\n"
            "       mpirun -np N mdflow run [options] FILE.yaml   (a pipeline over MPI ranks)\n"
            "Runs a workflow file: the input dataset, the model, named stages and their composition\n"
            "('relax + md' fuses them, 'relax | md' pipelines them), the sampler's budgets for inflight\n"
            "batching, the outputs, the hooks and the scheduler. examples/relax_md.yaml documents every\n"
            "key, examples/relax_md_pipe.yaml the pipeline's. Without FILE, runs\n"
            "the built-in default (%s, found under $MDFLOW_DATA, %s or the source tree):\n"
            "FIRE relaxation to fmax 0.05 eV/Å, then Langevin NVT MD of 256 argon systems of mixed\n"
            "sizes with inflight batching.\n\n"
            "  --check   read and check FILE and its input (every element needs model parameters:\n"
            "            lj's built-in ones are argon's), print the composition, run nothing\n"
            "  --resume  continue from the workflow's checkpoint (checkpoint: {path: FILE, every: N}):\n"
            "            systems finished before it are written again, the rest continue where they\n"
            "            were; it must belong to this workflow and input (the error says what differs)\n"
            "  --sequential  the baseline that fusion and inflight batching are measured against:\n"
            "            the sampler packs a batch within the same budgets, each stage runs on it in\n"
            "            turn until all its systems have left, then the next batch is built (no refills,\n"
            "            no checkpoints); the trajectories are the same, only the time differs. A\n"
            "            composition with '|' runs so too, '|' taken as '+' (stages.NAME.sampler,\n"
            "            inbox and placement do not apply; refused under mpirun)\n"
            "  --quiet   no progress line\n"
            "  --progress-every S  the progress line (stderr: systems done / in flight / waiting,\n"
            "            steps/s, elapsed, ETA): rewritten in place on a terminal, at most 4 times a\n"
            "            second; otherwise a line every S seconds (default 10; 0: none)\n"
            "  --plugin PATH.so  load a plugin before the workflow is read (repeatable), as the\n"
            "            workflow's plugins: [PATH.so] does (paths relative to the workflow's folder there)\n"
            "  --pipe-report FILE.json  with a pipeline: its report as JSON (wall_s, finished,\n"
            "            systems_per_s, nranks, and per stage instance what the summary's table shows)\n"
            "  --help    this text\n\n"
            "Pipelines. composition: relax | md runs each term as a pipeline stage of its own (its own\n"
            "batch, sampler and step loop) on workers of its own, or under mpirun on ranks of its own;\n"
            "'+' binds tighter than '|' and parentheses group a fused term: relax | (md1 + md2). The\n"
            "first stage of a term may carry sampler: {max_atoms, max_pairs, max_systems,\n"
            "refill_interval, refill_fraction} (its budget; keys left out come from the top-level\n"
            "sampler) and, after the first term, inbox: {systems: N, atoms: N} (what may wait for it;\n"
            "a full inbox holds the stage before back). placement: {STAGE: {cpus: N, cuda: N, sched:\n"
            "NAME, ranks: [R, ...]}} places each term by its first stage's name (terms without cpus\n"
            "share the CPU workers no term took). checkpoint: {path: run.ckpt.h5} writes a file per\n"
            "stage and rank (run.ckpt.md.r1.h5), which --resume continues. Over MPI ranks:\n"
            "  STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1 mpirun -np 2 mdflow run examples/relax_md_pipe.yaml\n"
            "Rank 0 writes the final structures and the summary; a stage on several ranks writes a log\n"
            "per rank (run.md.r1.csv), and HDF5 outputs of rank N > 0 get .rN (traj.r1.h5). Under\n"
            "mpirun any other command or composition is refused on every rank (exit 2).\n\n"
            "Two choices are made without being asked, each with a warning on stderr when it applies:\n"
            "a model.pairs entry left out mixes the species' parameters (Lorentz-Berthelot) with the\n"
            "cutoff max(rc_A, rc_B), not LAMMPS's arithmetic (rc_A + rc_B)/2; an npt stage changes the\n"
            "volume of systems periodic in x, y and z only, the others run at constant volume (NVT).\n\n"
            "output.snapshots, by reader: FILE.h5 (structure datasets: h5py, or a workflow's input),\n"
            "FILE.h5md (one H5MD file, every system: h5py; MDAnalysis opens the first system written),\n"
            "\"traj_{id}.h5md\" (one H5MD file per system: MDAnalysis, mda.Universe(\"traj_7.h5md\")).\n",
            MDF_DEFAULT_WORKFLOW, MDF_PKGDATADIR);
}

/* Under mpirun: a pipeline runs over the ranks (StarPU-MPI); anything else
 * is refused on every rank, before any work. */
static mdf_status run_under_launcher(mdf_workflow *wf, mdf_error *err)
{
    int n = mdf_runtime_launcher_size();
    if (!mdf_runtime_mpi_available())
        return mdf_error_set(err, MDF_ERR_INVALID, "mdflow was started by mpirun (%d ranks), but this mdflow was built "
                             "without StarPU-MPI: run it without mpirun, or install StarPU-MPI (Debian: "
                             "libstarpu-dev's starpumpi, openmpi) and configure and build mdflow again", n);
    if (wf->npipe <= 1 || wf->sequential) {
        char comp[512];
        wf_composition_text(wf, comp, sizeof comp);
        return mdf_error_set(err, MDF_ERR_INVALID, "mdflow run under mpirun needs a pipeline composition (relax | md) "
                             "to place on the %d ranks, and %s %s: write the composition with '|' between the "
                             "stages that run on different ranks, or run without mpirun", n, wf->path,
                             wf->sequential ? "runs its stages in sequence (--sequential)"
                                            : wf->ncomp > 1 ? "fuses its stages ('+')" : "has one stage");
    }
    wf->mpi = 1;
    return MDF_OK;
}

/* The ranks --check checks a pipeline's placement against: the launcher's,
 * else as many as the placement names (one without ranks). */
static int check_ranks(const mdf_workflow *wf)
{
    if (mdf_runtime_launcher_size() > 1) return mdf_runtime_launcher_size();
    int n = 1;
    for (int g = 0; g < wf->npipe; g++)
        for (int i = 0; i < wf->pipe[g].nranks; i++)
            if (wf->pipe[g].ranks[i] + 1 > n) n = wf->pipe[g].ranks[i] + 1;
    return n;
}

/* What the run does, for its first line. */
static const char *run_kind(const mdf_workflow *wf, int pipeline)
{
    static char text[160];
    if (wf->sequential) snprintf(text, sizeof text, "stages in sequence on static batches (at most %lld atoms in "
                                 "flight)", (long long)wf->sampler.max_atoms);
    else if (!pipeline) snprintf(text, sizeof text, "inflight batching (at most %lld atoms in flight)",
                                 (long long)wf->sampler.max_atoms);
    else if (wf->mpi) snprintf(text, sizeof text, "a pipeline of %d stages over %d MPI ranks", wf->npipe,
                               mdf_runtime_launcher_size());
    else if (check_ranks(wf) > 1) /* placed on ranks, started without mpirun */
        snprintf(text, sizeof text, "a pipeline of %d stages placed on %d MPI ranks (mpirun -np %d)", wf->npipe,
                 check_ranks(wf), check_ranks(wf));
    else snprintf(text, sizeof text, "a pipeline of %d stages in one process", wf->npipe);
    return text;
}

/* mdflow run [--check] [--resume | --sequential] [FILE]: returns the exit status. */
static int run_workflow_command(int argc, char **argv)
{
    mdf_error err;
    mdf_error_clear(&err);
    const char *file = NULL;
    int check_only = 0, resume = 0, sequential = 0, quiet = 0;
    const char *sched_report = NULL, *pipe_report = NULL;
    double progress_every = PROGRESS_EVERY_DEFAULT;
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            usage_run(stdout);
            return 0;
        }
        if (!strcmp(argv[k], "--plugin") || !strncmp(argv[k], "--plugin=", 9)) {
            const char *path = argv[k][8] == '=' ? argv[k] + 9 : k + 1 < argc ? argv[++k] : NULL;
            if (!path) {
                mdf_error_set(&err, MDF_ERR_INVALID, "--plugin needs a file: --plugin PATH.so");
                return fail(&err);
            }
            if (mdf_plugin_load(path, &err) != MDF_OK) return fail(&err);
        } else if (!strcmp(argv[k], "--check")) check_only = 1;
        else if (!strcmp(argv[k], "--quiet")) quiet = 1;
        else if (!strcmp(argv[k], "--progress-every")) {
            if (k + 1 == argc) {
                mdf_error_set(&err, MDF_ERR_INVALID, "--progress-every needs seconds: --progress-every S");
                return fail(&err);
            }
            if (cli_double_min("--progress-every", argv[++k], 0.0, 0, "seconds >= 0 (0: no progress line)",
                               &progress_every, &err) != MDF_OK)
                return fail(&err);
        }
        else if (!strcmp(argv[k], "--sched-report") && k + 1 < argc) sched_report = argv[++k]; /* mdflow sched's */
        else if (!strcmp(argv[k], "--pipe-report")) {
            if (k + 1 == argc) {
                mdf_error_set(&err, MDF_ERR_INVALID, "--pipe-report needs a file: --pipe-report FILE.json");
                return fail(&err);
            }
            pipe_report = argv[++k];
        }
        else if (!strcmp(argv[k], "--resume")) resume = 1;
        else if (!strcmp(argv[k], "--sequential")) sequential = 1;
        else if (argv[k][0] == '-' || file) {
            mdf_error_set(&err, MDF_ERR_INVALID, "unexpected argument '%s': mdflow run takes one workflow file "
                          "(see mdflow run --help)", argv[k]);
            return fail(&err);
        } else file = argv[k];
    }
    if (resume && sequential) {
        mdf_error_set(&err, MDF_ERR_INVALID, "--resume and --sequential do not go together: checkpoints belong to "
                      "inflight runs, so resume without --sequential");
        return fail(&err);
    }
    int is_default = !file;
    if (is_default && !(file = runner_find_data(MDF_DEFAULT_WORKFLOW))) {
        mdf_error_set(&err, MDF_ERR_IO, "the default workflow %s was not found under $MDFLOW_DATA, %s or %s: "
                      "install mdflow (make install) or pass a workflow file", MDF_DEFAULT_WORKFLOW, MDF_PKGDATADIR,
                      MDF_SRCDIR);
        return fail(&err);
    }
    static mdf_workflow wf; /* large (paths): not on the stack */
    if (wf_load(file, &wf, &err) != MDF_OK) return fail(&err);
    wf.resume = resume;
    wf.sequential = sequential;
    wf.quiet = quiet;
    wf.progress_every = progress_every;
    wf.sched_report = sched_report;
    wf.pipe_report = pipe_report;
    int pipeline = wf.npipe > 1 && !sequential;
    if (launcher_rank >= 0 && run_under_launcher(&wf, &err) != MDF_OK) return fail(&err);
    char comp[512];
    wf_composition_text(&wf, comp, sizeof comp);
    if (launcher_rank <= 0) /* once, from rank 0, under mpirun */
        printf("mdflow: %s %s: %s of %s, %s\n", is_default ? "default workload, workflow" : "workflow", file, comp,
               wf.input, run_kind(&wf, pipeline));
    if (check_only) return wf_check_input(&wf, check_ranks(&wf), &err) == MDF_OK ? 0 : fail(&err);
    fflush(stdout);
    return wf_run(&wf, &err) == MDF_OK ? 0 : fail(&err);
}

/* mdflow methods|models [--plugin PATH.so ...]: returns the exit status. */
static int listing_command(int argc, char **argv, void (*print)(void))
{
    mdf_error err;
    mdf_error_clear(&err);
    for (int k = 1; k < argc; k++) {
        const char *path = NULL;
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            printf("usage: mdflow %s [--plugin PATH.so ...]\nLists the registered %s with their parameters (name, "
                   "help, default, range and unit); a plugin's entries are marked with its file.%s\n", argv[0],
                   print == print_models ? "models" : "integrators and optimisers",
                   print == print_models ? "\nmdflow models --kim lists the installed KIM portable models (--model kim:NAME)." : "");
            return 0;
        }
        if (!strcmp(argv[k], "--kim") && print == print_models) return print_kim_models();
        if (!strcmp(argv[k], "--plugin") && k + 1 < argc) path = argv[++k];
        else if (!strncmp(argv[k], "--plugin=", 9)) path = argv[k] + 9;
        if (!path) {
            mdf_error_set(&err, MDF_ERR_INVALID, "unexpected argument '%s': mdflow %s takes --plugin PATH.so only",
                          argv[k], argv[0]);
            return fail(&err);
        }
        if (mdf_plugin_load(path, &err) != MDF_OK) return fail(&err);
    }
    print();
    return 0;
}

/* mdflow --version: what this program is and what it runs on. */
static int print_version(void)
{
    mdf_runtime_versions_info v;
    mdf_runtime_versions(&v);
#ifdef MDF_USE_CUDA
    const char *cuda = "yes";
#else
    const char *cuda = "no";
#endif
    printf("mdflow %s\n", PACKAGE_VERSION);
    printf("plugin API version %d (MDFLOW_API_VERSION)\n", MDFLOW_API_VERSION);
    printf("StarPU %d.%d.%d (built against), %d.%d.%d (running)\n", v.built[0], v.built[1], v.built[2],
           v.running[0], v.running[1], v.running[2]);
    printf("CUDA %s (StarPU %s CUDA)\n", cuda, v.starpu_cuda ? "with" : "without");
    return 0;
}

/* ---- under mpirun ---------------------------------------------------------------------------- */

static char sigterm_text[160];
static size_t sigterm_len;

/* mpirun ends the other ranks with SIGTERM when one rank ends first (a
 * crash, a kill): say so, or the job's output shows only mpirun's words. */
static void on_sigterm(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, sigterm_text, sigterm_len); /* async-signal-safe */
    (void)w;
    _exit(143);
}

/* A process of an mpirun with several ranks: its errors carry its rank, and
 * a SIGTERM from mpirun leaves a line. */
static void launcher_setup(void)
{
    if (mdf_runtime_launcher_size() <= 1) return;
    launcher_rank = mdf_runtime_launcher_rank();
    int n = snprintf(sigterm_text, sizeof sigterm_text, "mdflow: rank %d: stopped by a signal from mpirun (another "
                     "rank ended first; see mpirun's message)\n", launcher_rank);
    sigterm_len = n > 0 && (size_t)n < sizeof sigterm_text ? (size_t)n : strlen(sigterm_text);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

/* Commands other than `mdflow run` with a pipeline have nothing to share
 * between ranks: each rank would run the whole command, writing the same
 * files at once. Refused on every rank. */
static int refuse_under_launcher(const char *cmd)
{
    mdf_error err;
    mdf_error_clear(&err);
    mdf_error_set(&err, MDF_ERR_INVALID, "mdflow %s under mpirun (%d ranks): only mdflow run with a pipeline "
                  "composition (relax | md) runs over MPI ranks: run mdflow %s without mpirun", cmd,
                  mdf_runtime_launcher_size(), cmd);
    return fail(&err);
}

int main(int argc, char **argv)
{
    mdf_error err;
    mdf_error_clear(&err);
    md_options o;
    md_options_init(&o, CMD_MD);
    const char *cmd = argc < 2 ? "run" : argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage_main(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) return print_version();
    launcher_setup();
    if (launcher_rank >= 0 && strcmp(cmd, "run") != 0 && argc >= 2) return refuse_under_launcher(cmd);
    if (!strcmp(cmd, "plot")) return plot_command(argc - 1, argv + 1);
    /* MDFLOW_PLUGIN_PATH first, for every command: its entries are then
     * names like the built-ins'. */
    if (mdf_plugin_load_env(&err) != MDF_OK) return fail(&err);
    if (argc < 2) return run_workflow_command(argc, argv);
    if (!strcmp(cmd, "methods")) return listing_command(argc - 1, argv + 1, print_methods);
    if (!strcmp(cmd, "models")) return listing_command(argc - 1, argv + 1, print_models);
    if (!strcmp(cmd, "run")) return run_workflow_command(argc - 1, argv + 1);
    if (!strcmp(cmd, "sched")) return sched_command(argc - 1, argv + 1, MDF_DEFAULT_WORKFLOW);
    if (!strcmp(cmd, "perfmodels")) {
        if (argc > 2) {
            fprintf(stderr, "mdflow perfmodels: no arguments (STARPU_HOME picks the models)\n");
            return 2;
        }
        if (mdf_runtime_print_perfmodels(stdout) != 0) {
            fprintf(stderr, "mdflow perfmodels: neither STARPU_HOME nor HOME is set: set one\n");
            return 1;
        }
        return 0;
    }
    if (!strcmp(cmd, "md") || !strcmp(cmd, "relax")) {
        md_options_init(&o, !strcmp(cmd, "relax") ? CMD_RELAX : CMD_MD);
        int r = parse_options(argc - 1, argv + 1, &o, &err);
        if (r == -1) return 0;
        if (r != MDF_OK) return fail(&err);
        return run_command(&o, &err) == MDF_OK ? 0 : fail(&err);
    }
    mdf_error_set(&err, MDF_ERR_INVALID, "unknown command '%s' (see mdflow --help)", cmd);
    usage_main(stderr);
    return fail(&err);
}

/* mdflow — the command-line program.
 *
 *   mdflow                 run the built-in default workload (examples/)
 *   mdflow md [options]    molecular dynamics of every structure of a file
 *   mdflow help | --help   usage
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "mdflow/mdflow.h"

#ifndef MDF_PKGDATADIR
#define MDF_PKGDATADIR "/usr/local/share/mdflow"
#endif
#ifndef MDF_SRCDIR
#define MDF_SRCDIR "."
#endif
#define MDF_DEFAULT_DATASET "examples/argon_mixed.xyz"

typedef struct md_options {
    const char *input, *output, *thermo_file, *sched, *model;
    mdf_lj_config lj;
    int lj_species_given;
    double lj_epsilon, lj_sigma, lj_cutoff;
    int lj_shift;
    mdf_md_config md;
    double temperature;
    int64_t seed;
    int64_t shards;
    int64_t ncpus, ncuda;
    int quiet;
} md_options;

static void usage_md(FILE *fp)
{
    fprintf(fp,
            "usage: mdflow md --input FILE.xyz [options]\n"
            "Molecular dynamics of every structure in FILE.xyz, all at once, as a StarPU task graph.\n\n"
            "  --input FILE          extended XYZ file (one or many frames)\n"
            "  --output FILE         final structures (extended XYZ)\n"
            "  --model lj            interatomic model (lj: Lennard-Jones)\n"
            "  --lj-epsilon E        eV, for every element of the input (default 0.0104, argon)\n"
            "  --lj-sigma S          Å (default 3.40)\n"
            "  --lj-cutoff RC        Å (default 2.5 sigma)\n"
            "  --lj-species SYM:E:S:RC   per-element parameters (repeatable; replaces the three above)\n"
            "  --lj-pair A:B:E:S:RC  explicit pair (default: Lorentz-Berthelot mixing)\n"
            "  --lj-shift            shift pair energies to zero at the cutoff\n"
            "  --integrator NAME     velocity_verlet (NVE; default)\n"
            "  --steps N             steps to run (default 100)\n"
            "  --dt FS               time step in fs (default 1.0)\n"
            "  --temperature K       draw Maxwell-Boltzmann velocities at K (default: keep the file's)\n"
            "  --seed N              random seed for velocities (default 1)\n"
            "  --skin A              neighbour-list skin, Å (default 1.0)\n"
            "  --thermo N            a thermo row every N steps (default steps/10; 0: none)\n"
            "  --thermo-per-system   one row per system instead of batch totals\n"
            "  --thermo-file FILE    write thermo rows to FILE (default: standard output)\n"
            "  --shards N            shards of the batch (default: from workers and size)\n"
            "  --chunk-atoms N       split a shard's model work above N atoms (default: automatic,\n"
            "                        1024-8192 from the batch size and the workers)\n"
            "  --window N            steps submitted ahead of completion (default 8)\n"
            "  --sched NAME          StarPU scheduler (STARPU_SCHED wins), e.g. eager, lws, dmda\n"
            "  --ncpus N, --ncuda N  StarPU workers (STARPU_NCPU/STARPU_NCUDA win)\n"
            "  --quiet               no thermo rows on standard output (--thermo-file still written)\n"
            "  --help                this text\n");
}

static void usage_main(FILE *fp)
{
    fprintf(fp,
            "usage: mdflow [COMMAND] [options]\n"
            "Batched molecular dynamics of many atomic systems as StarPU task graphs.\n\n"
            "commands:\n"
            "  (none)     run the built-in default workload: hundreds of argon systems of mixed\n"
            "             sizes, NVE velocity Verlet, then a summary with StarPU's worker statistics\n"
            "  md         molecular dynamics of a structure file:\n"
            "             mdflow md --input FILE.xyz [--steps N --dt FS ...] (mdflow md --help)\n"
            "  help       this text\n");
}

static void md_options_init(md_options *o)
{
    memset(o, 0, sizeof *o);
    mdf_md_config_init(&o->md);
    mdf_lj_config_init(&o->lj);
    o->model = "lj";
    o->md.steps = 100;
    o->md.thermo_every = -1;
    o->lj_epsilon = 0.0104;
    o->lj_sigma = 3.40;
    o->lj_cutoff = -1.0;
    o->temperature = -1.0;
    o->seed = 1;
    o->ncpus = o->ncuda = -1;
}

enum {
    OPT_INPUT = 256, OPT_OUTPUT, OPT_MODEL, OPT_EPS, OPT_SIGMA, OPT_RC, OPT_SPECIES, OPT_PAIR, OPT_SHIFT,
    OPT_INTEGRATOR, OPT_STEPS, OPT_DT, OPT_TEMP, OPT_SEED, OPT_SKIN, OPT_THERMO, OPT_THERMO_SYS,
    OPT_THERMO_FILE, OPT_SHARDS, OPT_CHUNK, OPT_WINDOW, OPT_SCHED, OPT_NCPUS, OPT_NCUDA, OPT_QUIET, OPT_HELP
};

static const struct option md_long_options[] = {
    {"input", required_argument, 0, OPT_INPUT}, {"output", required_argument, 0, OPT_OUTPUT},
    {"model", required_argument, 0, OPT_MODEL}, {"lj-epsilon", required_argument, 0, OPT_EPS},
    {"lj-sigma", required_argument, 0, OPT_SIGMA}, {"lj-cutoff", required_argument, 0, OPT_RC},
    {"lj-species", required_argument, 0, OPT_SPECIES}, {"lj-pair", required_argument, 0, OPT_PAIR},
    {"lj-shift", no_argument, 0, OPT_SHIFT}, {"integrator", required_argument, 0, OPT_INTEGRATOR},
    {"steps", required_argument, 0, OPT_STEPS}, {"dt", required_argument, 0, OPT_DT},
    {"temperature", required_argument, 0, OPT_TEMP}, {"seed", required_argument, 0, OPT_SEED},
    {"skin", required_argument, 0, OPT_SKIN}, {"thermo", required_argument, 0, OPT_THERMO},
    {"thermo-per-system", no_argument, 0, OPT_THERMO_SYS}, {"thermo-file", required_argument, 0, OPT_THERMO_FILE},
    {"shards", required_argument, 0, OPT_SHARDS}, {"chunk-atoms", required_argument, 0, OPT_CHUNK},
    {"window", required_argument, 0, OPT_WINDOW}, {"sched", required_argument, 0, OPT_SCHED},
    {"ncpus", required_argument, 0, OPT_NCPUS}, {"ncuda", required_argument, 0, OPT_NCUDA},
    {"quiet", no_argument, 0, OPT_QUIET}, {"help", no_argument, 0, OPT_HELP}, {0, 0, 0, 0}};

/* Returns MDF_OK, an error, or -1 when --help was printed. */
static int parse_md_options(int argc, char **argv, md_options *o, mdf_error *err)
{
    int c;
    int64_t iv;
    mdf_status st = MDF_OK;
    optind = 1;
    opterr = 0;
    while (st == MDF_OK && (c = getopt_long(argc, argv, "", md_long_options, NULL)) != -1) {
        const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        switch (c) {
        case OPT_INPUT: o->input = optarg; break;
        case OPT_OUTPUT: o->output = optarg; break;
        case OPT_MODEL: o->model = optarg; break;
        case OPT_EPS: st = cli_double("--lj-epsilon", optarg, &o->lj_epsilon, err); break;
        case OPT_SIGMA: st = cli_double("--lj-sigma", optarg, &o->lj_sigma, err); break;
        case OPT_RC: st = cli_double("--lj-cutoff", optarg, &o->lj_cutoff, err); break;
        case OPT_SPECIES: st = cli_lj_species(optarg, &o->lj, err); o->lj_species_given = 1; break;
        case OPT_PAIR: st = cli_lj_pair(optarg, &o->lj, err); break;
        case OPT_SHIFT: o->lj_shift = 1; break;
        case OPT_INTEGRATOR: o->md.integrator = optarg; break;
        case OPT_STEPS: st = cli_int64("--steps", optarg, &o->md.steps, err); break;
        case OPT_DT: st = cli_double("--dt", optarg, &o->md.dt_fs, err); break;
        case OPT_TEMP: st = cli_double("--temperature", optarg, &o->temperature, err); break;
        case OPT_SEED: st = cli_int64("--seed", optarg, &o->seed, err); break;
        case OPT_SKIN: st = cli_double("--skin", optarg, &o->md.skin, err); break;
        case OPT_THERMO: st = cli_int64("--thermo", optarg, &o->md.thermo_every, err); break;
        case OPT_THERMO_SYS: o->md.thermo_per_system = 1; break;
        case OPT_THERMO_FILE: o->thermo_file = optarg; break;
        case OPT_SHARDS: st = cli_int64("--shards", optarg, &o->shards, err); break;
        case OPT_CHUNK:
            st = cli_int64("--chunk-atoms", optarg, &iv, err);
            o->md.chunk_atoms = (int32_t)iv;
            break;
        case OPT_WINDOW:
            st = cli_int64("--window", optarg, &iv, err);
            o->md.window = (int)iv;
            break;
        case OPT_SCHED: o->sched = optarg; break;
        case OPT_NCPUS: st = cli_int64("--ncpus", optarg, &o->ncpus, err); break;
        case OPT_NCUDA: st = cli_int64("--ncuda", optarg, &o->ncuda, err); break;
        case OPT_QUIET: o->quiet = 1; break;
        case OPT_HELP: usage_md(stdout); return -1;
        default:
            return mdf_error_set(err, MDF_ERR_INVALID, "unknown or incomplete option '%s' (see mdflow md --help)", name);
        }
    }
    if (st == MDF_OK && optind < argc)
        st = mdf_error_set(err, MDF_ERR_INVALID, "unexpected argument '%s' (see mdflow md --help)", argv[optind]);
    if (st == MDF_OK && !o->input)
        st = mdf_error_set(err, MDF_ERR_INVALID, "--input is required (see mdflow md --help)");
    if (st == MDF_OK && strcmp(o->model, "lj") != 0)
        st = mdf_error_set(err, MDF_ERR_INVALID, "unknown model '%s': available: lj", o->model);
    if (st == MDF_OK && o->shards < 0) st = mdf_error_set(err, MDF_ERR_INVALID, "--shards must be >= 0");
    return st;
}

/* Every element of the input gets the same parameters unless --lj-species was given. */
static mdf_status lj_from_options(md_options *o, const mdf_frame_list *frames, mdf_error *err)
{
    o->lj.shift = o->lj_shift;
    if (o->lj_species_given) return MDF_OK;
    double rc = o->lj_cutoff > 0.0 ? o->lj_cutoff : 2.5 * o->lj_sigma;
    int seen[128] = {0};
    for (size_t i = 0; i < frames->count; i++)
        for (int64_t a = 0; a < frames->frames[i].natoms; a++) {
            int z = frames->frames[i].numbers[a];
            if (z < 1 || z > 118 || seen[z]) continue;
            seen[z] = 1;
            mdf_status st = mdf_lj_config_add_species(&o->lj, z, o->lj_epsilon, o->lj_sigma, rc, err);
            if (st != MDF_OK) return st;
        }
    return MDF_OK;
}

static void print_summary(const mdf_batch *b, const mdf_md_report *r)
{
    printf("\nmdflow summary\n");
    printf("  systems %zu, atoms %lld, shards %d, model chunks %d\n", mdf_batch_nsystems(b),
           (long long)r->atoms, r->nshards, r->nchunks);
    printf("  %lld steps in %.3f s: %.4g atom-steps/s\n", (long long)r->steps, r->wall_seconds,
           r->atom_steps_per_second);
    printf("  model evaluations %lld, neighbour-list rebuilds %lld (summed over systems)\n",
           (long long)r->model_evaluations, (long long)r->list_rebuilds);
    printf("  largest neighbour count %d of %d slots, atoms beyond the slots %lld\n", r->max_neighbours,
           r->list_slots, (long long)r->overflowed_atoms);
    mdf_runtime_print_worker_stats(stdout);
}

static mdf_status write_output(const char *path, mdf_batch *b, mdf_error *err)
{
    size_t n = mdf_batch_nsystems(b);
    mdf_frame *frames = calloc(n, sizeof *frames);
    if (!frames) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to write %zu structures", n);
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < n; i++) st = mdf_batch_get_frame(b, i, &frames[i], err);
    if (st == MDF_OK) st = mdf_xyz_write(path, frames, n, 0, err);
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

static void thermo_close(thermo_file *t)
{
    if (!t->path || !t->fp) return;
    long written = ftell(t->fp);
    fclose(t->fp);
    if (written > 0) rename(t->tmp, t->path);
    else remove(t->tmp);
}

static mdf_status run_md(md_options *o, mdf_error *err)
{
    mdf_frame_list frames;
    mdf_frame_list_init(&frames);
    mdf_status st = mdf_xyz_read(o->input, &frames, err);
    if (st == MDF_OK && frames.count == 0)
        st = mdf_error_set(err, MDF_ERR_INVALID, "%s holds no structure", o->input);
    if (st == MDF_OK) st = lj_from_options(o, &frames, err);
    thermo_file thermo = {0};
    if (st == MDF_OK) st = thermo_open(&thermo, o->thermo_file, o->quiet, err);
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
    if (st == MDF_OK) st = mdf_model_create_lj(&o->lj, &model, err);
    mdf_batch_config bc;
    mdf_batch_config_init(&bc);
    bc.nshards = (int)o->shards;
    if (st == MDF_OK) st = mdf_batch_create(frames.frames, frames.count, &bc, &batch, err);
    if (st == MDF_OK && o->temperature >= 0.0)
        st = mdf_batch_thermalize(batch, o->temperature, (uint64_t)o->seed, o->md.status, err);
    if (o->md.thermo_every < 0) o->md.thermo_every = o->md.steps >= 10 ? o->md.steps / 10 : 1;
    o->md.thermo = thermo.fp;
    mdf_md_report report;
    if (st == MDF_OK) st = mdf_md_run(batch, model, &o->md, &report, err);
    if (st == MDF_OK && o->output) st = write_output(o->output, batch, err);
    if (st == MDF_OK) print_summary(batch, &report);
    mdf_batch_destroy(batch);
    mdf_model_destroy(model);
    if (started) mdf_runtime_stop();
    thermo_close(&thermo);
    mdf_frame_list_free(&frames);
    return st;
}

static const char *default_dataset(void)
{
    static char path[4096];
    const char *env = getenv("MDFLOW_DATA");
    const char *dirs[] = {env, MDF_PKGDATADIR, MDF_SRCDIR};
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        if (!dirs[k]) continue;
        snprintf(path, sizeof path, "%s/%s", dirs[k], MDF_DEFAULT_DATASET);
        if (access(path, R_OK) == 0) return path;
    }
    return NULL;
}

static int fail(const mdf_error *err)
{
    fprintf(stderr, "mdflow: %s: %s\n", mdf_status_name(err->code), err->message);
    /* 2: the input or the command line must change; 1: anything else. */
    int bad_input = err->code == MDF_ERR_INVALID || err->code == MDF_ERR_PARSE || err->code == MDF_ERR_PHYSICS;
    return bad_input ? 2 : 1;
}

int main(int argc, char **argv)
{
    mdf_error err;
    mdf_error_clear(&err);
    md_options o;
    md_options_init(&o);
    if (argc < 2) {
        const char *data = default_dataset();
        if (!data) {
            mdf_error_set(&err, MDF_ERR_IO, "the default workload %s was not found under $MDFLOW_DATA, %s or %s",
                          MDF_DEFAULT_DATASET, MDF_PKGDATADIR, MDF_SRCDIR);
            return fail(&err);
        }
        printf("mdflow: default workload %s: NVE velocity Verlet, argon Lennard-Jones\n", data);
        o.input = data;
        o.lj_shift = 1;
        o.md.steps = 200;
        o.md.dt_fs = 5.0;
        o.temperature = 40.0;
        o.md.thermo_every = 20;
        return run_md(&o, &err) == MDF_OK ? 0 : fail(&err);
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage_main(stdout);
        return 0;
    }
    if (!strcmp(cmd, "md")) {
        int r = parse_md_options(argc - 1, argv + 1, &o, &err);
        if (r == -1) return 0;
        if (r != MDF_OK) return fail(&err);
        return run_md(&o, &err) == MDF_OK ? 0 : fail(&err);
    }
    mdf_error_set(&err, MDF_ERR_INVALID, "unknown command '%s' (see mdflow --help)", cmd);
    usage_main(stderr);
    return fail(&err);
}

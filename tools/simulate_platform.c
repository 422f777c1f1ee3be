/* mdflow sched --simulate: the simulated machine from a one-line
 * description, written as the bus files StarPU's SimGrid mode reads (the
 * files StarPU writes itself when it calibrates a real machine's bus). */
#define _POSIX_C_SOURCE 200809L
#include "simulate_platform.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* StarPU's limits as configured by scripts/build-starpu-simgrid.sh
 * (--enable-maxcpus=64; 4 CUDA devices is StarPU's default). */
#define SIM_MAX_CPUS 64
#define SIM_MAX_GPUS 4

static mdf_status bad_spec(const char *spec, const char *why, mdf_error *err)
{
    return mdf_error_set(err, MDF_ERR_INVALID,
                         "--simulate '%s': %s; write e.g. --simulate cpus=16,gpus=4 (keys: cpus 1-%d, gpus 0-%d, "
                         "gpu_gbps, gpu_latency_us, gpu_mem_gib)", spec, why, SIM_MAX_CPUS, SIM_MAX_GPUS);
}

static int parse_number(const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

mdf_status sim_platform_parse(const char *spec, sim_platform *p, mdf_error *err)
{
    *p = (sim_platform){.cpus = 0, .gpus = 0, .gpu_gbps = 25.0, .gpu_latency_us = 10.0, .gpu_mem_gib = 80.0};
    char copy[256], why[160];
    if (strlen(spec) >= sizeof copy) return bad_spec(spec, "too long", err);
    snprintf(copy, sizeof copy, "%s", spec);
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            snprintf(why, sizeof why, "'%s' is not KEY=VALUE", item);
            return bad_spec(spec, why, err);
        }
        *eq = '\0';
        const char *key = item, *val = eq + 1;
        double v = 0.0;
        int ok = 0;
        if (!strcmp(key, "cpus") || !strcmp(key, "gpus")) {
            int cpus = !strcmp(key, "cpus");
            ok = !parse_number(val, cpus ? 1 : 0, cpus ? SIM_MAX_CPUS : SIM_MAX_GPUS, &v) && v == (int)v;
            *(cpus ? &p->cpus : &p->gpus) = (int)v;
        } else if (!strcmp(key, "gpu_gbps")) ok = !parse_number(val, 0.001, 10000, &p->gpu_gbps);
        else if (!strcmp(key, "gpu_latency_us")) ok = !parse_number(val, 0, 1e6, &p->gpu_latency_us);
        else if (!strcmp(key, "gpu_mem_gib")) ok = !parse_number(val, 0.001, 1e5, &p->gpu_mem_gib);
        else {
            snprintf(why, sizeof why, "unknown key '%s'", key);
            return bad_spec(spec, why, err);
        }
        if (!ok) {
            snprintf(why, sizeof why, "%s=%s is out of range or not a number", key, val);
            return bad_spec(spec, why, err);
        }
    }
    if (p->cpus < 1) return bad_spec(spec, "cpus=N is required", err);
    if (p->cpus + p->gpus > SIM_MAX_CPUS) return bad_spec(spec, "cpus + gpus must be at most 64", err);
    return MDF_OK;
}

void sim_platform_describe(const sim_platform *p, char *out, size_t n)
{
    if (p->gpus == 0) snprintf(out, n, "%d CPU%s", p->cpus, p->cpus == 1 ? "" : "s");
    else
        snprintf(out, n, "%d CPU%s + %d GPU%s (%g GB/s and %g us to each, %g GiB each)", p->cpus,
                 p->cpus == 1 ? "" : "s", p->gpus, p->gpus == 1 ? "" : "s", p->gpu_gbps, p->gpu_latency_us,
                 p->gpu_mem_gib);
}

/* HOME/.starpu/sampling/bus, folder by folder (HOME's parent exists: it
 * is mdflow sched's temporary folder). */
static int make_bus_dir(const char *home, char *dir, size_t n)
{
    const char *parts[] = {"", "/.starpu", "/sampling", "/bus"};
    size_t len = 0;
    dir[0] = '\0';
    for (int k = 0; k < 4; k++) {
        len += (size_t)snprintf(dir + len, n - len, "%s", k ? parts[k] : home);
        if (len >= n || (mkdir(dir, 0777) != 0 && errno != EEXIST)) return -1;
    }
    return 0;
}

static FILE *open_bus_file(const char *dir, const char *ext)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.%s", dir, SIM_HOST, ext);
    return fopen(path, "w");
}

/* Memory nodes: 0 the RAM, 1.. the GPUs; each GPU reaches the others
 * through the RAM (no peer copies). */
static void write_matrix(FILE *fp, int nodes, double host_gpu)
{
    fputs("# to", fp);
    for (int d = 0; d < nodes; d++) fprintf(fp, "\t%d", d);
    fputc('\n', fp);
    for (int s = 0; s < nodes; s++) {
        for (int d = 0; d < nodes; d++) {
            double v = s == d ? 0.0 : s == 0 || d == 0 ? host_gpu : NAN;
            fprintf(fp, "%s%e", d ? "\t" : "", v);
        }
        fputc('\n', fp);
    }
}

static void write_config(FILE *fp, const sim_platform *p)
{
    fprintf(fp, "# Current configuration\n%d # Number of CPUs\n1 # Number of NUMA nodes\n%d # Number of CUDA nodes\n"
                "0 # Number of OpenCL nodes\n0 # Number of FPGA nodes\n0 # Number of Disk nodes\n"
                "0 # Number of MPI_MS nodes\n0 # Number of TCPIP_MS nodes\n0 # Number of HIP nodes\n",
            p->cpus, p->gpus);
}

/* SimGrid's platform: a host per worker (its speed only converts the
 * models' lengths to flops and back), links RAM <-> each GPU. */
static void write_platform(FILE *fp, const sim_platform *p)
{
    double bps = p->gpu_gbps * 1e9, lat = p->gpu_latency_us * 1e-6;
    fputs("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
          "<platform version=\"4.1\">\n <zone id=\"AS0\" routing=\"Full\">\n  <host id=\"MAIN\" speed=\"1f\"/>\n", fp);
    for (int c = 0; c < p->cpus; c++) fprintf(fp, "  <host id=\"CPU%d\" speed=\"2000000000f\"/>\n", c);
    for (int g = 0; g < p->gpus; g++)
        fprintf(fp, "  <host id=\"CUDA%d\" speed=\"2000000000f\">\n    <prop id=\"model\" value=\"simulated GPU\"/>\n"
                    "    <prop id=\"memsize\" value=\"%.0f\"/>\n    <prop id=\"memcpy_peer\" value=\"0\"/>\n  </host>\n",
                g, p->gpu_mem_gib * 1073741824.0);
    fputs("  <host id=\"RAM\" speed=\"1f\"/>\n", fp);
    fprintf(fp, "  <link id=\"Host\" bandwidth=\"%.0fBps\" latency=\"0s\"/>\n", bps * (p->gpus > 0 ? p->gpus : 1));
    for (int g = 0; g < p->gpus; g++)
        fprintf(fp, "  <link id=\"RAM-CUDA%d\" bandwidth=\"%.0fBps\" latency=\"%gs\"/>\n"
                    "  <link id=\"CUDA%d-RAM\" bandwidth=\"%.0fBps\" latency=\"%gs\"/>\n",
                g, bps, lat, g, bps, lat);
    for (int g = 0; g < p->gpus; g++)
        fprintf(fp, "  <route src=\"RAM\" dst=\"CUDA%d\" symmetrical=\"NO\"><link_ctn id=\"RAM-CUDA%d\"/>"
                    "<link_ctn id=\"Host\"/></route>\n  <route src=\"CUDA%d\" dst=\"RAM\" symmetrical=\"NO\">"
                    "<link_ctn id=\"CUDA%d-RAM\"/><link_ctn id=\"Host\"/></route>\n", g, g, g, g);
    fputs(" </zone>\n</platform>\n", fp);
}

mdf_status sim_platform_write(const sim_platform *p, const char *home, mdf_error *err)
{
    char dir[1100];
    if (make_bus_dir(home, dir, sizeof dir) != 0)
        return mdf_error_set(err, MDF_ERR_IO, "cannot make %s for the simulated machine: %s", dir, strerror(errno));
    const char *ext[] = {"config", "latency", "bandwidth", "platform.xml", "platform.v4.xml"};
    int ok = 1;
    for (int k = 0; k < 5; k++) {
        FILE *fp = open_bus_file(dir, ext[k]);
        if (!fp) return mdf_error_set(err, MDF_ERR_IO, "cannot write %s/%s.%s: %s", dir, SIM_HOST, ext[k],
                                      strerror(errno));
        if (k == 0) write_config(fp, p);
        else if (k == 1) write_matrix(fp, 1 + p->gpus, p->gpu_latency_us);
        else if (k == 2) write_matrix(fp, 1 + p->gpus, p->gpu_gbps * 1000.0); /* MB/s */
        else write_platform(fp, p);
        ok &= fclose(fp) == 0;
    }
    return ok ? MDF_OK : mdf_error_set(err, MDF_ERR_IO, "writing the simulated machine's files in %s failed", dir);
}

int sim_find_simulator(const char *self, char *out, size_t n)
{
    const char *env = getenv("MDF_SIMULATE");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", self);
    char *slash = strrchr(dir, '/');
    if (!slash) return -1;
    *slash = '\0';
    snprintf(out, n, "%s/mdflow-simulate", dir);
    if (access(out, X_OK) == 0) return 0;
    /* libtool runs the build tree's mdflow from .libs/ (lt-mdflow). */
    slash = strrchr(dir, '/');
    if (slash && !strcmp(slash, "/.libs")) {
        *slash = '\0';
        snprintf(out, n, "%s/mdflow-simulate", dir);
        if (access(out, X_OK) == 0) return 0;
    }
    return -1;
}

/* mdflow sched — a workflow under several StarPU scheduling policies, one
 * child process per run (tools/sched.c). */
#ifndef MDF_SCHED_H
#define MDF_SCHED_H

#include "mdflow/mdflow.h"

/* mdflow sched [FILE.yaml] [--policies A,B,...] [--repeats N] [--json FILE]
 * [--gantt PREFIX | --no-gantt] [--window T0:T1] [--no-calibration];
 * argv[0] is "sched", default_workflow the built-in workflow's relative
 * path (runner_find_data finds it). Returns the exit status: 0; 2 for bad
 * usage or a bad workflow; 1 when a run or a picture fails. */
int sched_command(int argc, char **argv, const char *default_workflow);

/* The child's side (`mdflow run --sched-report FILE`, hidden): wf_run starts
 * the task trace before its run (mdf_runtime_trace_start) and calls this
 * after it, while StarPU still runs, to write what the parent reads: the
 * run's figures, each worker's profile, the bytes moved between memory
 * nodes and every traced task. */
mdf_status sched_report_write(const char *path, const mdf_stage_report *r, mdf_error *err);

#endif

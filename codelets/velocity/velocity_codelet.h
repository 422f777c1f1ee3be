/* mdflow — codelets that set or measure velocities. */
#ifndef MDF_VELOCITY_CODELET_H
#define MDF_VELOCITY_CODELET_H

#include <starpu.h>
#include "velocity_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

void mdf_velocity_cpu(void *buffers[], void *cl_arg);
void mdf_velocity_cuda(void *buffers[], void *cl_arg);
void mdf_kinetic_cpu(void *buffers[], void *cl_arg);
void mdf_kinetic_cuda(void *buffers[], void *cl_arg);

/* Draws Maxwell–Boltzmann velocities at kT for the systems with
 * args->status, removes their total momentum and records their kinetic
 * energy (vel RW, atoms R, sys R, res RW). */
int mdf_insert_velocity(starpu_data_handle_t vel, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                        starpu_data_handle_t res, const mdf_velocity_args *args);

typedef struct mdf_kinetic_args {
    int64_t work;
    int32_t nsys;
} mdf_kinetic_args;

/* Kinetic energy of every system (vel R, atoms R, sys R, res RW). */
int mdf_insert_kinetic(starpu_data_handle_t vel, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                       starpu_data_handle_t res, const mdf_kinetic_args *args);

#ifdef __cplusplus
}
#endif
#endif

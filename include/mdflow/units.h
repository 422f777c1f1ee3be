/* mdflow — units, as in ASE (CODATA 2014, ASE's default).
 *
 * Energies in eV, lengths in Å, masses in amu, temperatures in K. Time steps
 * are given in fs; internally time is measured in sqrt(amu Å² / eV)
 * (≈ 10.1805 fs), so that F = m a holds with no conversion factor. */
#ifndef MDFLOW_UNITS_H
#define MDFLOW_UNITS_H

/* Elementary charge and atomic mass unit of CODATA 2014, as ASE uses them. */
#define MDF_CODATA_E   1.6021766208e-19
#define MDF_CODATA_AMU 1.660539040e-27
#define MDF_CODATA_K   1.38064852e-23

/* Boltzmann constant in eV/K. */
#define MDF_KB (MDF_CODATA_K / MDF_CODATA_E)

/* One femtosecond in internal time units: 1e-15 s * 1e10 * sqrt(e/amu). */
#define MDF_FS_INTERNAL 0.09822694788464063

/* Converts a time step in fs to internal units. */
static inline double mdf_fs_to_internal(double fs) { return fs * MDF_FS_INTERNAL; }

/* 1 eV/Å³ in GPa, for pressures. */
#define MDF_EV_PER_A3_IN_GPA 160.21766208

#endif

/* mdflow — the periodic table: symbols and standard atomic masses.
 *
 * Generated from ASE 3.22.1 (Debian python3-ase) so that masses agree with ASE
 * bit for bit:
 *   /usr/bin/python3 -c "from ase.data import atomic_masses, chemical_symbols"
 * atomic_masses is ASE's default table, IUPAC 2016 (atomic_masses_iupac2016),
 * printed with repr(), which round-trips exactly. Velocities read from extxyz
 * momenta columns are momenta / mass, so any difference here would show up
 * as velocities that differ from ASE's in the last bit. */
#include <stdlib.h>
#include <string.h>
#include "mdflow/frame.h"

#define MDF_NELEMENTS 119 /* Z = 0 ("X", ASE's dummy atom) .. 118 */

typedef struct element {
    const char *symbol;
    double mass; /* amu */
} element;

static const element elements[MDF_NELEMENTS] = {
    {"X", 1.0}, /* 0 */
    {"H", 1.008}, /* 1 */
    {"He", 4.002602}, /* 2 */
    {"Li", 6.94}, /* 3 */
    {"Be", 9.0121831}, /* 4 */
    {"B", 10.81}, /* 5 */
    {"C", 12.011}, /* 6 */
    {"N", 14.007}, /* 7 */
    {"O", 15.999}, /* 8 */
    {"F", 18.998403163}, /* 9 */
    {"Ne", 20.1797}, /* 10 */
    {"Na", 22.98976928}, /* 11 */
    {"Mg", 24.305}, /* 12 */
    {"Al", 26.9815385}, /* 13 */
    {"Si", 28.085}, /* 14 */
    {"P", 30.973761998}, /* 15 */
    {"S", 32.06}, /* 16 */
    {"Cl", 35.45}, /* 17 */
    {"Ar", 39.948}, /* 18 */
    {"K", 39.0983}, /* 19 */
    {"Ca", 40.078}, /* 20 */
    {"Sc", 44.955908}, /* 21 */
    {"Ti", 47.867}, /* 22 */
    {"V", 50.9415}, /* 23 */
    {"Cr", 51.9961}, /* 24 */
    {"Mn", 54.938044}, /* 25 */
    {"Fe", 55.845}, /* 26 */
    {"Co", 58.933194}, /* 27 */
    {"Ni", 58.6934}, /* 28 */
    {"Cu", 63.546}, /* 29 */
    {"Zn", 65.38}, /* 30 */
    {"Ga", 69.723}, /* 31 */
    {"Ge", 72.63}, /* 32 */
    {"As", 74.921595}, /* 33 */
    {"Se", 78.971}, /* 34 */
    {"Br", 79.904}, /* 35 */
    {"Kr", 83.798}, /* 36 */
    {"Rb", 85.4678}, /* 37 */
    {"Sr", 87.62}, /* 38 */
    {"Y", 88.90584}, /* 39 */
    {"Zr", 91.224}, /* 40 */
    {"Nb", 92.90637}, /* 41 */
    {"Mo", 95.95}, /* 42 */
    {"Tc", 97.90721}, /* 43 */
    {"Ru", 101.07}, /* 44 */
    {"Rh", 102.9055}, /* 45 */
    {"Pd", 106.42}, /* 46 */
    {"Ag", 107.8682}, /* 47 */
    {"Cd", 112.414}, /* 48 */
    {"In", 114.818}, /* 49 */
    {"Sn", 118.71}, /* 50 */
    {"Sb", 121.76}, /* 51 */
    {"Te", 127.6}, /* 52 */
    {"I", 126.90447}, /* 53 */
    {"Xe", 131.293}, /* 54 */
    {"Cs", 132.90545196}, /* 55 */
    {"Ba", 137.327}, /* 56 */
    {"La", 138.90547}, /* 57 */
    {"Ce", 140.116}, /* 58 */
    {"Pr", 140.90766}, /* 59 */
    {"Nd", 144.242}, /* 60 */
    {"Pm", 144.91276}, /* 61 */
    {"Sm", 150.36}, /* 62 */
    {"Eu", 151.964}, /* 63 */
    {"Gd", 157.25}, /* 64 */
    {"Tb", 158.92535}, /* 65 */
    {"Dy", 162.5}, /* 66 */
    {"Ho", 164.93033}, /* 67 */
    {"Er", 167.259}, /* 68 */
    {"Tm", 168.93422}, /* 69 */
    {"Yb", 173.054}, /* 70 */
    {"Lu", 174.9668}, /* 71 */
    {"Hf", 178.49}, /* 72 */
    {"Ta", 180.94788}, /* 73 */
    {"W", 183.84}, /* 74 */
    {"Re", 186.207}, /* 75 */
    {"Os", 190.23}, /* 76 */
    {"Ir", 192.217}, /* 77 */
    {"Pt", 195.084}, /* 78 */
    {"Au", 196.966569}, /* 79 */
    {"Hg", 200.592}, /* 80 */
    {"Tl", 204.38}, /* 81 */
    {"Pb", 207.2}, /* 82 */
    {"Bi", 208.9804}, /* 83 */
    {"Po", 208.98243}, /* 84 */
    {"At", 209.98715}, /* 85 */
    {"Rn", 222.01758}, /* 86 */
    {"Fr", 223.01974}, /* 87 */
    {"Ra", 226.02541}, /* 88 */
    {"Ac", 227.02775}, /* 89 */
    {"Th", 232.0377}, /* 90 */
    {"Pa", 231.03588}, /* 91 */
    {"U", 238.02891}, /* 92 */
    {"Np", 237.04817}, /* 93 */
    {"Pu", 244.06421}, /* 94 */
    {"Am", 243.06138}, /* 95 */
    {"Cm", 247.07035}, /* 96 */
    {"Bk", 247.07031}, /* 97 */
    {"Cf", 251.07959}, /* 98 */
    {"Es", 252.083}, /* 99 */
    {"Fm", 257.09511}, /* 100 */
    {"Md", 258.09843}, /* 101 */
    {"No", 259.101}, /* 102 */
    {"Lr", 262.11}, /* 103 */
    {"Rf", 267.122}, /* 104 */
    {"Db", 268.126}, /* 105 */
    {"Sg", 271.134}, /* 106 */
    {"Bh", 270.133}, /* 107 */
    {"Hs", 269.1338}, /* 108 */
    {"Mt", 278.156}, /* 109 */
    {"Ds", 281.165}, /* 110 */
    {"Rg", 281.166}, /* 111 */
    {"Cn", 285.177}, /* 112 */
    {"Nh", 286.182}, /* 113 */
    {"Fl", 289.19}, /* 114 */
    {"Mc", 289.194}, /* 115 */
    {"Lv", 293.204}, /* 116 */
    {"Ts", 293.208}, /* 117 */
    {"Og", 294.214}, /* 118 */
};

/* Symbols in strcmp order, for bsearch in mdf_element_number(); readers call
 * it once per atom, so a linear scan over 119 strings would show up. */
typedef struct symbol_index {
    const char *symbol;
    int z;
} symbol_index;

static const symbol_index by_symbol[MDF_NELEMENTS] = {
    {"Ac", 89}, {"Ag", 47}, {"Al", 13}, {"Am", 95}, {"Ar", 18}, {"As", 33},
    {"At", 85}, {"Au", 79}, {"B", 5}, {"Ba", 56}, {"Be", 4}, {"Bh", 107},
    {"Bi", 83}, {"Bk", 97}, {"Br", 35}, {"C", 6}, {"Ca", 20}, {"Cd", 48},
    {"Ce", 58}, {"Cf", 98}, {"Cl", 17}, {"Cm", 96}, {"Cn", 112}, {"Co", 27},
    {"Cr", 24}, {"Cs", 55}, {"Cu", 29}, {"Db", 105}, {"Ds", 110}, {"Dy", 66},
    {"Er", 68}, {"Es", 99}, {"Eu", 63}, {"F", 9}, {"Fe", 26}, {"Fl", 114},
    {"Fm", 100}, {"Fr", 87}, {"Ga", 31}, {"Gd", 64}, {"Ge", 32}, {"H", 1},
    {"He", 2}, {"Hf", 72}, {"Hg", 80}, {"Ho", 67}, {"Hs", 108}, {"I", 53},
    {"In", 49}, {"Ir", 77}, {"K", 19}, {"Kr", 36}, {"La", 57}, {"Li", 3},
    {"Lr", 103}, {"Lu", 71}, {"Lv", 116}, {"Mc", 115}, {"Md", 101}, {"Mg", 12},
    {"Mn", 25}, {"Mo", 42}, {"Mt", 109}, {"N", 7}, {"Na", 11}, {"Nb", 41},
    {"Nd", 60}, {"Ne", 10}, {"Nh", 113}, {"Ni", 28}, {"No", 102}, {"Np", 93},
    {"O", 8}, {"Og", 118}, {"Os", 76}, {"P", 15}, {"Pa", 91}, {"Pb", 82},
    {"Pd", 46}, {"Pm", 61}, {"Po", 84}, {"Pr", 59}, {"Pt", 78}, {"Pu", 94},
    {"Ra", 88}, {"Rb", 37}, {"Re", 75}, {"Rf", 104}, {"Rg", 111}, {"Rh", 45},
    {"Rn", 86}, {"Ru", 44}, {"S", 16}, {"Sb", 51}, {"Sc", 21}, {"Se", 34},
    {"Sg", 106}, {"Si", 14}, {"Sm", 62}, {"Sn", 50}, {"Sr", 38}, {"Ta", 73},
    {"Tb", 65}, {"Tc", 43}, {"Te", 52}, {"Th", 90}, {"Ti", 22}, {"Tl", 81},
    {"Tm", 69}, {"Ts", 117}, {"U", 92}, {"V", 23}, {"W", 74}, {"X", 0},
    {"Xe", 54}, {"Y", 39}, {"Yb", 70}, {"Zn", 30}, {"Zr", 40},
};

double mdf_element_mass(int z)
{
    /* ASE gives the dummy atom X (z = 0) a mass of 1.0; mdflow reports 0, as
     * for any unknown z, so that a batch rejects "X" atoms as an unknown
     * element instead of integrating a made-up particle. */
    if (z < 1 || z >= MDF_NELEMENTS) return 0.0;
    return elements[z].mass;
}

const char *mdf_element_symbol(int z)
{
    if (z < 0 || z >= MDF_NELEMENTS) return NULL;
    return elements[z].symbol;
}

static int compare_symbol(const void *key, const void *entry)
{
    return strcmp((const char *)key, ((const symbol_index *)entry)->symbol);
}

int mdf_element_number(const char *symbol)
{
    if (!symbol) return -1;
    const symbol_index *hit = bsearch(symbol, by_symbol, MDF_NELEMENTS,
                                      sizeof by_symbol[0], compare_symbol);
    return hit ? hit->z : -1;
}

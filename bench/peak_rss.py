#!/usr/bin/python3
"""Runs a command and records its peak resident memory (python3 standard
library only): peak_rss.py FOLDER -- PROGRAM ARGS...

The command inherits stdin, stdout, stderr and the environment (under
mpirun: its rank's), and this exits with its status. Its peak resident set
in KiB (getrusage's ru_maxrss of the command and of the children it waited
for) goes to FOLDER/rss.<pid>, one file per process, so that every rank of
an MPI run leaves its own and the benchmark sums them."""
import os
import subprocess
import sys


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: peak_rss.py FOLDER -- PROGRAM ARGS...\n")
        return 2
    folder, cmd = argv[1], argv[3:]
    try:
        p = subprocess.Popen(cmd)
    except OSError as exc:
        sys.stderr.write("peak_rss.py: cannot run %s: %s\n" % (cmd[0], exc))
        return 127
    _, status, usage = os.wait4(p.pid, 0)
    with open(os.path.join(folder, "rss.%d" % p.pid), "w") as fp:
        fp.write("%d\n" % usage.ru_maxrss)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

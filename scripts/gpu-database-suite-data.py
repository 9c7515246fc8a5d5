#!/usr/bin/env python3
"""The step rows of one GPU-database call (scripts/gpu-database.sh, issue 37) as the two data files
its suites read: one with the calibration architectures' rows, one with the validation ones'
(validate/measurements/SPLIT_gpu_database.yaml decided which is which before anything ran).

  python3 scripts/gpu-database-suite-data.py MEASUREMENTS NAME [MORE_MEASUREMENTS...]

MEASUREMENTS is the committed folder of a call (validate/measurements/h200_20261128); a later call
that ran what the first one's budget left (its call-2/ folder) is named after it, and its rows are
added. Writes validate/data/NAME_calibration.csv and NAME_validation.csv (another folder:
CLUSTERSIM_SUITE_DATA_DIR): every step row of every
stack, taken whole, in the order measured, without the header (the suite names the columns).
"""
import csv
import os
import sys

COLUMNS = ("architecture,class,set,stack,precision,batch,seq,step_ms,step_ms_min,step_ms_max,"
           "tokens_per_s,first_step_s,host_issue_ms,kernels_per_step,host_us_per_kernel,"
           "peak_allocated_mib,peak_reserved_mib,steady_allocated_mib,parameters,layers,"
           "attn_implementation,optimizer,oom,note").split(",")
STACKS = ("pytorch_eager", "torch_compile")


def rows_of(folder):
    for stack in STACKS:
        path = os.path.join(folder, "steps", f"steps_{stack}.csv")
        if not os.path.exists(path):
            continue
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != COLUMNS:
                sys.exit(f"{path}: columns {reader.fieldnames} are not the database's {COLUMNS}")
            for no, row in enumerate(reader, start=2):
                for key, value in row.items():
                    if "," in value:
                        sys.exit(f"{path}:{no}: {key} holds a comma ('{value}'): the suite's csv "
                                 "reader splits on every comma")
                yield row


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    folders, name = [sys.argv[1]] + sys.argv[3:], sys.argv[2]
    out_dir = os.environ.get("CLUSTERSIM_SUITE_DATA_DIR", os.path.join("validate", "data"))
    by_set = {"calibration": [], "validation": []}
    for folder in folders:
        for row in rows_of(folder):
            if row["set"] not in by_set:
                sys.exit(f"{folder}: architecture {row['architecture']} is in set "
                         f"'{row['set']}', neither calibration nor validation")
            by_set[row["set"]].append(row)
    for role, rows in by_set.items():
        out = os.path.join(out_dir, f"{name}_{role}.csv")
        tmp = out + ".tmp"
        try:
            with open(tmp, "w", newline="") as f:
                f.write(f"# The {role} architectures' step rows of the GPU database "
                        f"({', '.join(folders)}),\n# written by scripts/gpu-database-suite-data.py; "
                        f"columns: {','.join(COLUMNS)}\n")
                writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
                writer.writerows(rows)
            os.replace(tmp, out)  # never a half-written data file
        except OSError as e:
            if os.path.exists(tmp):
                os.remove(tmp)
            sys.exit(f"{out}: not written: {e.strerror} ({e.filename or tmp})")
        print(f"{out}: {len(rows)} rows")


if __name__ == "__main__":
    main()

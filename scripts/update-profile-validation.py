#!/usr/bin/env python3
"""Rewrites each shipped profile's `validation:` block from what the suite measures now.

  python3 scripts/update-profile-validation.py [BUILD_DIR]   (default: build)

Runs `clustersim validate --suite validate/suites`, reads its "step-time error by profile" and
"by profile and software stack" sections, and replaces the block at the end of
profiles/<profile>.yaml (runs, MAPE, worst, suites, today's date, and per stack). The report's
header quotes these figures; tests/suite_test.cpp (Profile.StatedErrorIsTheOneTheSuiteMeasures)
fails when a block and the suite disagree, so run this after any change that moves the suite.
"""
import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE = re.compile(r"^  (\S+)\s+(?:(\S+)\s+)?MAPE ([\d.]+)%, worst ([\d.]+)% on (\d+) runs? in (.*) \((.*)\)$")


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    exe = os.path.join(ROOT, build, "cli", "clustersim")
    out = subprocess.run([exe, "validate", "--suite", "validate/suites"], cwd=ROOT,
                         capture_output=True, text=True).stdout
    overall, stacks = {}, {}
    section = None
    for line in out.splitlines():
        if "step-time error by profile and software stack" in line:
            section = "stack"
        elif "step-time error by profile" in line:
            section = "profile"
        elif not line.startswith("  "):
            section = None
        elif section:
            m = LINE.match(line)
            if not m:
                continue
            profile, stack, mape, worst, runs, precisions, suites = m.groups()
            entry = dict(runs=int(runs), mape=float(mape), worst=float(worst), suites=suites,
                         precisions=precisions)
            if section == "stack" and stack:
                stacks.setdefault(profile, {})[stack] = entry
            elif section == "profile" and not stack:
                overall[profile] = entry
    today = datetime.date.today().isoformat()
    for profile, e in overall.items():
        path = os.path.join(ROOT, "profiles", profile + ".yaml")
        if not os.path.exists(path):
            continue
        text = open(path).read()
        head = text[:text.index("\nvalidation:")] if "\nvalidation:" in text else text.rstrip("\n")
        block = ["validation:   # out of sample: validation sources only (validate/suites/SPLIT.md)",
                 f"  runs: {e['runs']}", f"  mape_percent: {e['mape']:.2f}",
                 f"  worst_percent: {e['worst']:.2f}",
                 f"  suites: \"{e['suites']}\"   # step time, every stack",
                 f"  precisions: \"{e['precisions']}\"", f"  date: {today}"]
        if profile in stacks:
            block.append("  stacks:   # the same per software stack (what a report with that stack quotes)")
            for stack, s in sorted(stacks[profile].items()):
                block.append(f"    {stack}: {{runs: {s['runs']}, mape_percent: {s['mape']:.2f}, "
                             f"worst_percent: {s['worst']:.2f}, suites: \"{s['suites']}\", "
                             f"precisions: \"{s['precisions']}\"}}")
        open(path, "w").write(head + "\n" + "\n".join(block) + "\n")
        print(f"{profile}: {e['runs']} runs, MAPE {e['mape']:.2f}%, worst {e['worst']:.2f}%")


if __name__ == "__main__":
    main()

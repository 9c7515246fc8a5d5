#!/usr/bin/env python3
"""Checks the relative links of the documentation: every [text](target) and ![alt](target) in
README.md and docs/**/*.md (or in the files given) must name a file inside the repository, and a
#anchor must name a heading of the target (or of the same file), as GitHub derives heading anchors.
Links with a scheme (https:, mailto:) are not checked. Code blocks and code spans are skipped.

  python3 scripts/check-doc-links.py [FILE.md ...]

Prints each broken link as FILE:LINE: message and exits 1 when there is one, 0 otherwise.
"""
import os
import re
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

LINK = re.compile(r"!?\[[^\]]*\]\(([^()\s]*)\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def prose_lines(path):
    """(line number, text) of each line outside fenced code blocks, with code spans removed."""
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if not in_fence:
                yield number, re.sub(r"`[^`]*`", "", line)


def slug(heading):
    """GitHub's anchor for a heading: the text of links kept, lower case, punctuation dropped,
    spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """Every anchor a markdown file offers: its headings' (a repeated one gets -1, -2, ...)."""
    if path not in cache:
        found, seen = set(), {}
        in_fence = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    in_fence = not in_fence
                    continue
                m = None if in_fence else HEADING.match(line)
                if m:
                    base = slug(m.group(1))
                    n = seen.get(base, 0)
                    seen[base] = n + 1
                    found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def check_link(source, target):
    """What is wrong with a link from file `source` to `target`, or None."""
    path, _, anchor = target.partition("#")
    if path:
        if path.startswith("/"):
            return f"'{target}': an absolute path; link relative to the file"
        resolved = os.path.realpath(os.path.join(os.path.dirname(source), path))
        if os.path.commonpath([resolved, ROOT]) != ROOT:
            return f"'{target}': outside the repository"
        if not os.path.exists(resolved):
            return f"'{target}': no such file"
    else:
        resolved = source
    if anchor:
        if not resolved.endswith(".md") or os.path.isdir(resolved):
            return f"'{target}': an anchor into a file that is not markdown"
        if anchor not in anchors(resolved):
            return f"'{target}': no heading with anchor #{anchor} in {os.path.relpath(resolved, ROOT)}"
    return None


def documentation_files():
    files = [os.path.join(ROOT, "README.md")]
    for folder, _, names in os.walk(os.path.join(ROOT, "docs")):
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".md")]
    return files


def main(argv):
    files = [os.path.realpath(f) for f in argv] or documentation_files()
    broken = links = 0
    for source in files:
        for number, line in prose_lines(source):
            for m in LINK.finditer(line):
                target = m.group(1)
                if not target or SCHEME.match(target):
                    continue
                links += 1
                problem = check_link(source, target)
                if problem:
                    broken += 1
                    print(f"{os.path.relpath(source, ROOT)}:{number}: {problem}")
    print(f"{links} relative links in {len(files)} files, {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

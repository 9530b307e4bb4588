#!/usr/bin/env python3
"""The docs a newcomer follows resolve: every relative link of README.md, docs/*.md and the other
READMEs points at a file or folder of the tree (anchors and web addresses aside; links inside code
blocks and inline code are not links). usage: docs_check.py SOURCE_DIR"""
import os
import re
import sys

SRC = sys.argv[1]
if SRC == "--selftest":  # a small tree made here: one broken link of four is what must be reported
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "docs"))
        open(os.path.join(t, "docs", "a.md"), "w").write("# a\n")
        open(os.path.join(t, "README.md"), "w").write(
            "[ok](docs/a.md) [anchor](docs/a.md#x) [web](https://example.org)\n"
            "[broken](docs/missing.md)\n`[inline](nowhere.md)`\n```\n[code](nowhere.md)\n```\n")
        r = subprocess.run([sys.executable, __file__, t], capture_output=True, text=True)
        ok = r.returncode == 1 and r.stdout.strip() == "README.md:2: a link to 'docs/missing.md', which is not in the tree"
        print("selftest:", "ok" if ok else "FAILED\n" + r.stdout)
        sys.exit(0 if ok else 1)
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def pages():
    yield os.path.join(SRC, "README.md")
    for d in ("docs", "scenarios", "hardware", "scripting", "python", "tests", "bench"):
        folder = os.path.join(SRC, d)
        if os.path.isdir(folder):
            for f in sorted(os.listdir(folder)):
                if f.endswith(".md"):
                    yield os.path.join(folder, f)


bad = []
count = 0
for page in pages():
    in_code = False
    for n, line in enumerate(open(page, encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        text = re.sub(r"`[^`]*`", "", line)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+://|^mailto:|^#", target):
                continue
            path = target.split("#", 1)[0]
            count += 1
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), path))):
                bad.append(f"{os.path.relpath(page, SRC)}:{n}: a link to '{target}', which is not in the tree")
if bad:
    print("\n".join(bad))
    sys.exit(1)
print(f"docs: {count} relative links, all resolve")

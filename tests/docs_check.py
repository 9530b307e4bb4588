#!/usr/bin/env python3
"""The docs a newcomer follows resolve and stay in their shape:
- every relative link of README.md, docs/*.md and the other READMEs points at a file or folder of the
  tree, and a link's #anchor (on its own page or another .md page) at one of that page's headings
  (GitHub's anchors: lower case, punctuation dropped, spaces as '-') or an <a name/id> there; web
  addresses aside; links inside code blocks and inline code are not links;
- README.md stays under 400 lines (the reference lives in docs/);
- every page in docs/ is linked from README.md, and each hand-written one links back to the README
  in its first lines (the generated pages, each rewritten by its script, aside).
usage: docs_check.py SOURCE_DIR"""
import os
import re
import sys

README_MAX_LINES = 400  # README.md has fewer lines than this
# pages in docs/ that a script writes (a back link would be lost at their next regeneration)
GENERATED = {
    "operators.md": "scripts/operators_doc.py",
    "scenario-keys.md": "scripts/keys_doc.py",
    "gallery.md": "scripts/gallery.sh",
    "validation.md": "scripts/validation.py",
    "validation-gpu.md": "scripts/validation_gpu.py",
    "validation-kernels.md": "scripts/validation_kernels.py",
    "validation-serving.md": "scripts/validation_serving.py",
}
BACK_LINK_LINES = 8  # a hand-written page links back to the README within its first lines
SKIP_DIRS = {".git", "out", "node_modules"}  # and every build*/ folder

LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def selftest():
    """Small trees made here: the problems planted in them are exactly what must be reported."""
    import subprocess
    import tempfile

    def check(files):
        with tempfile.TemporaryDirectory() as t:
            for name, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(t, name)), exist_ok=True)
                open(os.path.join(t, name), "w", encoding="utf-8").write(text)
            r = subprocess.run([sys.executable, __file__, t], capture_output=True, text=True)
            return r.returncode, r.stdout.strip().splitlines()

    code, out = check({
        "README.md":
            "# Top `rsim` — a, b\n"
            "[ok](docs/a.md) [anchor](docs/a.md#x-y) [web](https://example.org) [self](#top-rsim--a-b)\n"
            "[broken](docs/missing.md)\n"
            "[bad anchor](docs/a.md#nope) [second](docs/a.md#x-y-1) [named](docs/a.md#here)\n"
            "`[inline](nowhere.md)`\n```\n[code](nowhere.md)\n# not a heading\n```\n"
            "[bad self](#not-a-heading)\n",
        "docs/a.md": "# a\n\nBack to the [README](../README.md).\n\n## X y\n\n## X y\n\n<a name=\"here\"></a>\n",
        "docs/b.md": "# b\n\nNo way back.\n",
    })
    want = [
        "README.md:3: a link to 'docs/missing.md', which is not in the tree",
        "README.md:4: a link to 'docs/a.md#nope', whose anchor is no heading of docs/a.md",
        "README.md:10: a link to '#not-a-heading', whose anchor is no heading of README.md",
        "docs/b.md: not linked from README.md",
        "docs/b.md: no link back to the README (../README.md) in its first 8 lines",
    ]
    ok = code == 1 and out == want
    code2, out2 = check({"README.md": "line\n" * README_MAX_LINES})
    ok2 = code2 == 1 and out2 == [f"README.md: {README_MAX_LINES} lines; it must stay under {README_MAX_LINES} (the reference belongs in docs/)"]
    print("selftest:", "ok" if ok and ok2 else "FAILED\n" + "\n".join(out + ["--"] + out2))
    sys.exit(0 if ok and ok2 else 1)


def pages(src):
    """README.md, then every other .md file of the tree (build and output folders aside)."""
    yield os.path.join(src, "README.md")
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for f in sorted(files):
            path = os.path.join(root, f)
            if f.endswith(".md") and os.path.normpath(path) != os.path.normpath(os.path.join(src, "README.md")):
                yield path


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def scan(path):
    """A page's links (line number, target) outside code, and its anchors."""
    links, anchors, seen = [], set(), {}
    in_code = False
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        anchors.update(HTML_ANCHOR.findall(line))
        m = HEADING.match(line)
        if m:
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            anchors.add(s if k == 0 else f"{s}-{k}")
        text = re.sub(r"`[^`]*`", "", line)
        links += [(n, t) for t in LINK.findall(text)]
    return links, anchors


def main(src):
    bad = []
    count = 0
    cache = {}

    def info(path):
        if path not in cache:
            cache[path] = scan(path)
        return cache[path]

    readme = os.path.join(src, "README.md")
    readme_targets = set()
    for page in pages(src):
        rel = os.path.relpath(page, src)
        for n, target in info(page)[0]:
            if re.match(r"^[a-z]+://|^mailto:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            count += 1
            if page == readme:
                readme_targets.add(dest)
            if not os.path.exists(dest):
                bad.append(f"{rel}:{n}: a link to '{target}', which is not in the tree")
            elif anchor and dest.endswith(".md") and os.path.isfile(dest) and anchor not in info(dest)[1]:
                bad.append(f"{rel}:{n}: a link to '{target}', whose anchor is no heading of {os.path.relpath(dest, src)}")
    lines = len(open(readme, encoding="utf-8").read().splitlines())
    if lines >= README_MAX_LINES:
        bad.append(f"README.md: {lines} lines; it must stay under {README_MAX_LINES} (the reference belongs in docs/)")
    docs = os.path.join(src, "docs")
    if os.path.isdir(docs):
        for f in sorted(os.listdir(docs)):
            page = os.path.normpath(os.path.join(docs, f))
            if not f.endswith(".md"):
                continue
            if page not in readme_targets:
                bad.append(f"docs/{f}: not linked from README.md")
            if f not in GENERATED:
                head = open(page, encoding="utf-8").read().splitlines()[:BACK_LINK_LINES]
                if not any("](../README.md" in line for line in head):
                    bad.append(f"docs/{f}: no link back to the README (../README.md) in its first {BACK_LINK_LINES} lines")
    if bad:
        print("\n".join(bad))
        sys.exit(1)
    print(f"docs: {count} relative links, all resolve (anchors too); README.md {lines} lines; "
          f"every docs/ page linked from it")


if __name__ == "__main__":
    if sys.argv[1] == "--selftest":
        selftest()
    main(sys.argv[1])

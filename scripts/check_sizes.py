#!/usr/bin/env python3
"""The house rule of issue 43: no source file over 800 physical lines and no function over 150
lines (.cpp, .hpp, .py outside tests/, build folders and generated files).

Files and functions over the limits today are listed in scripts/size_allowances.txt with the
size they may not exceed: the list may only shrink. The check fails when
  - a file or function is over its limit and not listed, or over its listed size (it grew);
  - a listed entry is now within the limit or gone (delete its line: the house got tidier), or
    smaller than listed (lower its number, so that it cannot grow back).
`--update` rewrites the allowances to today's sizes of what is still over (run it after a split,
never to let something grow: the review sees the file's diff).

Functions are found by their braces: a `{` that opens at namespace or class level after a
parenthesised header (`... ) {`, `) const {`, `) -> T {`, a constructor's initializer list) starts
one, its matching `}` ends it; lambdas and local classes count toward the function around them.
String and character literals, comments and preprocessor lines are skipped. Python: a `def`
runs until the next line indented no deeper than it.

usage: scripts/check_sizes.py [--update] [--root DIR]
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if "--root" in sys.argv:  # another tree (the test's)
    ROOT = os.path.abspath(sys.argv[sys.argv.index("--root") + 1])
ALLOW = os.path.join(ROOT, "scripts", "size_allowances.txt")
FILE_LIMIT, FUNC_LIMIT = 800, 150
SKIP_DIRS = {"tests", "build", "build-asan", "build-clang", "build-tsan", "dist", "out", ".git", "node_modules", "__pycache__"}
CONTAINERS = re.compile(r"\b(namespace|class|struct|union|enum|extern\s+\"C\")\b[^;()]*$")


def sources():
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
        for f in sorted(files):
            if f.endswith((".cpp", ".hpp", ".py")):
                p = os.path.join(d, f)
                with open(p, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                if "@generated" in text[:2000]:
                    continue
                yield os.path.relpath(p, ROOT), text


def strip_cpp(text):
    """The text with comments, literals and preprocessor lines blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":  # a preprocessor line (with its continuations)
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                i += 1
            continue
        if c == "/" and text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
            continue
        if c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if m:
                end = text.find(")" + m.group(1) + '"', i)
                end = n if end < 0 else end + len(m.group(1)) + 2
                out.append('""' + "\n" * text.count("\n", i, end))
                i = end
                continue
        if c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(c)  # a digit separator (1'000)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        line_start = c == "\n" or (line_start and c in " \t")
        i += 1
    return "".join(out)


def cpp_functions(text):
    """(name, first line, lines) of each function defined in the text."""
    s = strip_cpp(text)
    stack = []  # per open brace: (kind, line, header)
    funcs = []
    line = 1
    header_start = 0  # where the text before the next brace begins
    for i, c in enumerate(s):
        if c == "\n":
            line += 1
        elif c in ";":
            if all(k == "container" for k, _, _ in stack):
                header_start = i + 1
        elif c == "{":
            header = s[header_start:i]
            in_container = all(k == "container" for k, _, _ in stack)
            flat = " ".join(header.split())
            if in_container and CONTAINERS.search(flat) and ")" not in flat.split("{")[-1][-1:]:
                kind = "container"
            elif in_container and ")" in flat and not flat.rstrip().endswith("="):
                kind = "function"
            else:
                kind = "block"
            stack.append((kind, line, flat))
            header_start = i + 1
        elif c == "}":
            if not stack:
                continue
            kind, start, flat = stack.pop()
            if kind == "function":
                m = re.findall(r"([~\w:]+(?:<[^<>]*>)?|operator\s*\S+)\s*\(", flat)
                name = m[0] if m else flat[:40]
                if name in ("if", "for", "while", "switch") and len(m) > 1:
                    name = m[1]
                funcs.append((name.strip(), start, line - start + 1))
            header_start = i + 1
    return funcs


def py_functions(text):
    lines = text.split("\n")
    funcs = []
    for i, l in enumerate(lines):
        m = re.match(r"(\s*)(?:async\s+)?def\s+(\w+)", l)
        if not m:
            continue
        indent = len(m.group(1))
        end = i
        for j in range(i + 1, len(lines)):
            t = lines[j]
            if t.strip() and not t.lstrip().startswith("#") and len(t) - len(t.lstrip()) <= indent:
                break
            if t.strip():
                end = j
        funcs.append((m.group(2), i + 1, end - i + 1))
    return funcs


def measure():
    """{key: size} of everything over a limit; key 'path' for a file, 'path:name' for a function"""
    over = {}
    for path, text in sources():
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if n > FILE_LIMIT:
            over[path] = n
        funcs = py_functions(text) if path.endswith(".py") else cpp_functions(text)
        seen = {}
        for name, _, size in funcs:
            if size > FUNC_LIMIT:
                key = f"{path}:{name}"
                seen[key] = seen.get(key, 0) + 1
                if seen[key] > 1:
                    key += f"#{seen[key]}"
                over[key] = size
    return over


def read_allowances():
    allow = {}
    if os.path.exists(ALLOW):
        for l in open(ALLOW):
            l = l.split("#", 1)[0].strip() if not l.startswith("#") else ""
            if l:
                key, size = l.rsplit(None, 1)
                allow[key] = int(size)
    return allow


def main():
    over = measure()
    if "--update" in sys.argv:
        with open(ALLOW, "w") as f:
            f.write("# Files over 800 lines and functions over 150 lines today, each with the size it may not\n"
                    "# exceed (scripts/check_sizes.py): the list may only shrink. Split one, then run\n"
                    "# scripts/check_sizes.py --update.\n")
            for k in sorted(over):
                f.write(f"{k} {over[k]}\n")
        print(f"wrote {os.path.relpath(ALLOW, ROOT)}: {len(over)} entries")
        return 0
    allow = read_allowances()
    bad = []
    for k, size in sorted(over.items()):
        kind = "function" if ":" in k else "file"
        limit = FUNC_LIMIT if kind == "function" else FILE_LIMIT
        if k not in allow:
            bad.append(f"{k}: {size} lines, over the {limit}-line limit of a {kind} (split it)")
        elif size > allow[k]:
            bad.append(f"{k}: {size} lines, grown past its allowance of {allow[k]} (the list may only shrink: split it)")
        elif size < allow[k]:
            bad.append(f"{k}: {size} lines, below its allowance of {allow[k]}: lower it in scripts/size_allowances.txt (or run --update)")
    for k in sorted(set(allow) - set(over)):
        bad.append(f"{k}: within the limit now (or gone): delete its line from scripts/size_allowances.txt")
    files = sum(1 for k in over if ":" not in k)
    print(f"sizes: {files} files over {FILE_LIMIT} lines, {len(over) - files} functions over {FUNC_LIMIT} lines (all allowed: {not bad})")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


sys.exit(main())

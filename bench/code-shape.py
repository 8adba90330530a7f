#!/usr/bin/env python3
"""Issue 56's shape goals, checked crudely from the source text of the crates named:
non-test files over 600 lines, functions over 120 lines, and import circles between the
modules of a crate (an edge is a `crate::`/`super::` path; a path through a re-export counts
at the module that re-exports it; a module and its own parent or child are not a circle).

    python3 bench/code-shape.py seda seda-control seda-http seda-load seda-cli seda-sim

Prints the offenders and exits 1 if there are any. Brace counting, not a parser: a string
holding a brace can fool it, which is why it is a report, not a CI gate.
"""
import os
import re
import sys

FILE_MAX = 600
FN_MAX = 120
FN = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)')


def rust_files(root):
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith('.rs'):
                yield os.path.join(d, f)


def is_test_file(path):
    return path.endswith('/tests.rs') or '/tests/' in path


def long_functions(path):
    lines = open(path).read().split('\n')
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            code = re.sub(r'//.*', '', lines[j])
            code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
            code = re.sub(r"'(\\.|[^'\\])'", "''", code)
            for ch in code:
                if ch == '{':
                    depth, started = depth + 1, True
                elif ch == '}':
                    depth -= 1
            if started and depth <= 0:
                break
            if not started and code.rstrip().endswith(';'):
                break
            j += 1
        if j - i + 1 > FN_MAX:
            yield (j - i + 1, i + 1, m.group(6))


def modules(src):
    mods = {}
    for path in rust_files(src):
        parts = os.path.relpath(path, src)[:-3].split('/')
        if parts[-1] in ('mod', 'lib', 'main'):
            parts = parts[:-1]
        mods[tuple(parts)] = path
    return mods


def circles(src):
    """Strongly connected sets of top-level modules of the crate at `src`."""
    mods = modules(src)
    edges = {}
    for m, path in mods.items():
        text = open(path).read()
        cut = text.find('#[cfg(test)]\nmod tests')
        text = re.sub(r'//.*', '', text if cut < 0 else text[:cut])
        here = list(m) if path.endswith(('mod.rs', 'lib.rs', 'main.rs')) else list(m[:-1])
        for mm in re.finditer(r'\b(crate|super)((?:::super)*)::([A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)', text):
            if mm.group(1) == 'crate':
                base = []
            else:
                base = here[:len(here) - 1 - mm.group(2).count('super')]
            parts = base + mm.group(3).split('::')
            target = next((tuple(parts[:k]) for k in range(len(parts), -1, -1)
                           if tuple(parts[:k]) in mods), None)
            if target is None:
                continue
            a, b = m[:1], target[:1]
            if a != b and a and b:
                edges.setdefault(a, set()).add(b)
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted('::'.join(c) for c in comp))

    for v in {k[:1] for k in mods if k}:
        if v not in index:
            visit(v)
    return found


def main(crates):
    bad = 0
    for crate in crates:
        src = os.path.join('crates', crate, 'src')
        for path in sorted(rust_files(src)):
            n = sum(1 for _ in open(path))
            if n > FILE_MAX and not is_test_file(path):
                print(f'file over {FILE_MAX} lines: {path} {n}')
                bad += 1
            for n, line, name in long_functions(path):
                print(f'function over {FN_MAX} lines: {path}:{line} {name} {n}')
                bad += 1
        for comp in circles(src):
            print(f'import circle in {crate}: {" <-> ".join(comp)}')
            bad += 1
    print(f'{bad} offender(s) in {", ".join(crates)}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

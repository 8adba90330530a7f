#!/usr/bin/env python3
"""Per-request figures from a callgrind dump (`bench/static-benchmarks.sh`).

    callgrind_summary.py FILE REQUESTS [TOP]

Prints, tab-separated: instructions per request, allocator calls (malloc, calloc, realloc,
posix_memalign, aligned_alloc) per request; then the TOP functions by self instructions per
request, one per line ("self_per_request<TAB>name"). Callgrind counts instructions exactly, so
these figures repeat on a busy machine where wall time does not.
"""

import re
import sys
from collections import defaultdict

ALLOCATORS = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign"}


def parse(path):
    names = {}
    self_cost = defaultdict(int)
    alloc_calls = 0
    total = None
    current = None
    callee = None
    pending_calls = False
    name_re = re.compile(r"^\((\d+)\)(?: (.*))?$")

    def resolve(spec):
        m = name_re.match(spec)
        if not m:
            return spec
        ident, name = m.group(1), m.group(2)
        if name is not None:
            names[ident] = name
        return names.get(ident, ident)

    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                current = resolve(line[3:])
            elif line.startswith("cfn="):
                callee = resolve(line[4:])
            elif line.startswith("calls="):
                if callee in ALLOCATORS:
                    alloc_calls += int(line[6:].split()[0])
                pending_calls = True
            elif line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
            elif line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                if pending_calls:
                    # The cost line after `calls=` is the callee's inclusive cost, not self.
                    pending_calls = False
                elif len(parts) >= 2 and current is not None:
                    self_cost[current] += int(parts[1])
    return total or sum(self_cost.values()), alloc_calls, self_cost


def short(name, width=110):
    name = re.sub(r"<[^<>]*>", "<..>", name)
    return name if len(name) <= width else name[: width - 3] + "..."


def main():
    path, requests = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    total, allocs, self_cost = parse(path)
    print(f"{total / requests:.0f}\t{allocs / requests:.1f}")
    for name, cost in sorted(self_cost.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{cost / requests:.0f}\t{short(name)}")


if __name__ == "__main__":
    main()
